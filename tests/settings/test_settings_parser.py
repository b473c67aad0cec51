"""One parser of environment variables (``envsettings``) for every library: a malformed value fails loudly,
naming the variable and the value, wherever it is read.

The variables below were read twice before (by ``core.settings`` and by the library that uses them), once
loosely: ``DUEL_CPU_PINNING=of`` silently left CPU pinning on. Now each is parsed once, by the library's
frozen settings object, and both the library and the Django start-up refuse a typo.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from autoscaler.settings import AutoscalerSettings, autoscaler_settings
from builder.settings import BuilderSettings
from envsettings import SettingsError, env_bool, env_int, env_secret, env_url, once_per_environment
from run_duel.cpu_slots import pinning_enabled
from run_duel.registry import RegistryConfig
from run_duel.sandbox.images import cache_budget_from_env
from run_duel.settings import RunDuelSettings, run_duel_settings
from tests.django_start import load_settings_in_a_new_process

REPO = Path(__file__).resolve().parents[2]

#: Formerly duplicated variables, a typo in each, and the message that must name it.
TYPOS = [
    ("DUEL_CPU_PINNING", "of", "DUEL_CPU_PINNING='of' is not a boolean"),
    ("SANDBOX_ALLOW_UNISOLATED", "ture", "SANDBOX_ALLOW_UNISOLATED='ture' is not a boolean"),
    ("AGENT_IMAGE_CACHE_BYTES", "10G", "AGENT_IMAGE_CACHE_BYTES='10G' is not an integer"),
    ("AGENT_IMAGE_CACHE_BYTES", "-1", "AGENT_IMAGE_CACHE_BYTES=-1 must be >= 0"),
    ("AGENT_REGISTRY", "registry/arena", "AGENT_REGISTRY"),
]


@pytest.mark.parametrize(("name", "value", "message"), TYPOS)
def test_a_typo_in_a_run_duel_variable_stops_the_library(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError, match=message):
        run_duel_settings() if name != "AGENT_REGISTRY" else RegistryConfig.from_env()


@pytest.mark.parametrize(("name", "value", "message"), TYPOS)
def test_a_typo_in_a_run_duel_variable_stops_the_django_start_up(
    tmp_path: Path, name: str, value: str, message: str
) -> None:
    out = load_settings_in_a_new_process({"DATA_DIR": str(tmp_path), name: value})
    assert out.returncode != 0
    assert "ImproperlyConfigured" in out.stderr
    assert message.replace("\\", "") in out.stderr


def test_cpu_pinning_follows_the_one_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, expected in (("off", False), ("0", False), ("No", False), ("on", True), ("1", True)):
        monkeypatch.setenv("DUEL_CPU_PINNING", value)
        assert pinning_enabled() is expected
    monkeypatch.delenv("DUEL_CPU_PINNING")
    assert pinning_enabled() is True
    monkeypatch.setenv("DUEL_CPU_PINNING", "of")
    with pytest.raises(SettingsError, match="DUEL_CPU_PINNING='of'"):
        pinning_enabled()


def test_settings_are_frozen_and_built_once_per_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_IMAGE_CACHE_BYTES", "123")
    first = run_duel_settings()
    assert first is run_duel_settings()
    assert cache_budget_from_env() == first.image_cache_bytes == 123
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.cpu_pinning = False  # type: ignore[misc]
    monkeypatch.setenv("AGENT_IMAGE_CACHE_BYTES", "0")
    assert run_duel_settings() is not first and run_duel_settings().image_cache_bytes == 0
    assert isinstance(first, RunDuelSettings)
    assert dataclasses.is_dataclass(AutoscalerSettings) and dataclasses.is_dataclass(BuilderSettings)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("AGENT_BUILD_MEMORY_MB", "1GB", "AGENT_BUILD_MEMORY_MB='1GB' is not an integer"),
        ("AGENT_PIP_INDEX_URL", "pypi.org/simple", "AGENT_PIP_INDEX_URL='pypi.org/simple' must be an http"),
    ],
)
def test_a_typo_in_a_builder_variable_fails_loudly(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError, match=message):
        BuilderSettings.from_env()


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("AUTOSCALER_DRY_RUN", "yes please", "AUTOSCALER_DRY_RUN='yes please' is not a boolean"),
        ("WORKER_CONCURRENCY", "two", "WORKER_CONCURRENCY='two' is not an integer"),
        ("AUTOSCALER_MAX_WAIT_S", "1m", "AUTOSCALER_MAX_WAIT_S='1m' is not a number"),
        ("AUTOSCALER_PROVIDER", "aws", "AUTOSCALER_PROVIDER='aws' must be one of: local, digitalocean"),
    ],
)
def test_a_typo_in_an_autoscaler_variable_fails_loudly(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError, match=message):
        autoscaler_settings()


def test_the_parser_itself(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("X_FLAG", " Yes ")
    assert env_bool("X_FLAG", False) is True
    monkeypatch.setenv("X_COUNT", "7")
    assert env_int("X_COUNT", 1, minimum=1, maximum=9) == 7
    with pytest.raises(SettingsError, match="X_COUNT=7 must be <= 5"):
        env_int("X_COUNT", 1, maximum=5)
    monkeypatch.setenv("X_URL", "ftp://example.org")
    with pytest.raises(SettingsError, match=r"X_URL='ftp://example\.org' must be an http"):
        env_url("X_URL")
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    monkeypatch.setenv("X_SECRET_FILE", str(secret))
    assert env_secret("X_SECRET") == "s3cret"
    monkeypatch.setenv("X_SECRET", "other")
    with pytest.raises(SettingsError, match="either X_SECRET or X_SECRET_FILE"):
        env_secret("X_SECRET")

    built: list[int] = []

    @once_per_environment(["X_COUNT"])
    def build() -> int:
        built.append(env_int("X_COUNT", 0))
        return built[-1]

    assert (build(), build()) == (7, 7) and built == [7]
    monkeypatch.setenv("X_COUNT", "8")
    assert build() == 8 and built == [7, 8]


def test_no_library_reads_a_settings_variable_itself() -> None:
    """Every product module reads the environment through ``envsettings`` (a few documented exceptions:
    the harness runs inside agent images, the client reads its own login, processes hand their environment
    to children)."""
    allowed = {
        "run_duel/harness/arena_harness_player.py",  # copied into agent images, stdlib only
        "run_duel/health.py",  # reports the Docker SDK's own DOCKER_HOST/DOCKER_TLS_VERIFY
        "builder/wheels.py",  # hands the environment, PIP_* left out, to pip
        "publisher/gitrepo.py",  # hands PATH to git
        "ops/backup.py",  # hands the environment to pg_dump
        "core/actions/play.py",
        "core/celery.py",
        "core/wsgi.py",
        "core/gunicorn_conf.py",
        "autoscaler/__main__.py",
        "core/settings.py",
        "core/config.py",
        "envsettings/__init__.py",
    }
    packages = ("run_duel", "builder", "autoscaler", "core", "duel_runner", "tournament_manager", "web")
    readers = sorted(
        str(path.relative_to(REPO))
        for package in packages
        for path in (REPO / package).rglob("*.py")
        if "os.environ.get(" in path.read_text(encoding="utf-8") or "os.getenv(" in path.read_text()
    )
    harness = "run_duel/harness/"  # copied into agent images: stdlib only, reads what the sandbox sets
    assert [path for path in readers if path not in allowed and not path.startswith(harness)] == []
