"""A real Prometheus scrapes a running arena's /metrics (with its token) and sees a played duel move them."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from core_testlib import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        shutil.which("prometheus") is None, reason="Debian's prometheus (run_tests.sh installs it)"
    ),
]

TOKEN = "prometheus-test-token"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Prometheus:
    def __init__(self, url: str) -> None:
        self.url = url

    def query(self, expr: str) -> list[dict[str, Any]]:
        query = urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{query}", timeout=5) as response:
            body = json.load(response)
        assert body["status"] == "success", body
        return body["data"]["result"]

    def value(self, expr: str) -> float | None:
        result = self.query(expr)
        return float(result[0]["value"][1]) if result else None


@pytest.fixture
def prometheus(live_server: Any, settings: Any, tmp_path: Path) -> Iterator[Prometheus]:
    """Debian's Prometheus scraping the live test server every second, with the bearer token."""
    settings.METRICS_TOKEN = TOKEN
    target = urllib.parse.urlsplit(live_server.url).netloc
    (tmp_path / "token").write_text(TOKEN)
    (tmp_path / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        "  - job_name: rl-arena\n"
        "    metrics_path: /metrics\n"
        f"    authorization: {{credentials_file: {tmp_path / 'token'}}}\n"
        f"    static_configs: [{{targets: ['{target}']}}]\n"
    )
    port = _free_port()
    log = (tmp_path / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield Prometheus(f"http://127.0.0.1:{port}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_prometheus_sees_a_played_duel_move_the_metrics(prometheus: Prometheus, eligible: Any) -> None:
    from core.actions import schedule_duel
    from duel_runner.tasks import run_duel

    a = eligible("random", "tic-tac-toe", "a")
    b = eligible("random", "tic-tac-toe", "b")
    assert a.state == b.state == "ELIGIBLE"

    def scraped() -> float | None:
        try:
            return prometheus.value('up{job="rl-arena"}')
        except OSError:  # Prometheus still starting
            return None

    wait_for(lambda: scraped() == 1.0, 60, "Prometheus scraping /metrics with the token")
    recorded = 'rl_arena_duels_recorded_per_second{game="tic-tac-toe"}'
    assert prometheus.value(recorded) == 0.0

    duel = schedule_duel(a, b)
    wait_for(
        lambda: prometheus.value('rl_arena_jobs{kind="duel",state="queued"}') == 1.0,
        60,
        "the queued duel seen",
    )
    assert run_duel(duel.pk) == "recorded"
    wait_for(lambda: (prometheus.value(recorded) or 0) > 0, 60, "the recorded duel seen")
    assert prometheus.value('rl_arena_jobs{kind="duel",state="queued"}') == 0.0
    assert prometheus.value('rl_arena_rating_backlog{game="tic-tac-toe"}') == 1.0
    assert prometheus.value('rl_arena_ready{check="database"}') == 1.0
