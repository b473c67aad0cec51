"""The alert rules shipped in prometheus/ are valid and fire on what they should (promtool's own tests)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

PROMETHEUS_DIR = Path(__file__).resolve().parents[2] / "prometheus"

pytestmark = pytest.mark.skipif(shutil.which("promtool") is None, reason="Debian's prometheus package")


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["promtool", *args], cwd=PROMETHEUS_DIR, capture_output=True, text=True, timeout=120
    )


def test_alert_rules_pass_their_unit_tests() -> None:
    checked = _promtool("check", "rules", "alerts.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = _promtool("test", "rules", "alerts_test.yml")
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_the_shipped_prometheus_config_is_valid_and_loads_the_rules(tmp_path: Path) -> None:
    token = tmp_path / "metrics_token"
    token.write_text("token")
    config = (PROMETHEUS_DIR / "prometheus.yml").read_text()
    assert "/run/secrets/metrics_token" in config
    (tmp_path / "prometheus.yml").write_text(config.replace("/run/secrets/metrics_token", str(token)))
    shutil.copy(PROMETHEUS_DIR / "alerts.yml", tmp_path / "alerts.yml")
    checked = subprocess.run(
        ["promtool", "check", "config", "prometheus.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 10 rules found" in checked.stdout + checked.stderr


def test_every_alert_is_documented_for_operators() -> None:
    import yaml

    rules = yaml.safe_load((PROMETHEUS_DIR / "alerts.yml").read_text())
    names = [rule["alert"] for group in rules["groups"] for rule in group["rules"]]
    deployment = (PROMETHEUS_DIR.parent / "docs" / "DEPLOYMENT.md").read_text()
    assert [name for name in names if f"`{name}`" not in deployment] == []


@pytest.mark.skipif(shutil.which("amtool") is None, reason="Debian's prometheus-alertmanager package")
def test_the_shipped_alertmanager_config_is_valid() -> None:
    checked = subprocess.run(
        ["amtool", "check-config", "alertmanager.yml"],
        cwd=PROMETHEUS_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
