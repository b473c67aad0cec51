"""Helpers of the core suite (plain functions; fixtures are in conftest.py). A uniquely named module, so
``from core_testlib import ...`` is never confused with another folder's conftest."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "example_players"
REDIS_TEST_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
WORKER_LEASE_S = 4


def is_postgres() -> bool:
    """Whether the suite runs against PostgreSQL."""
    from django.db import connection

    return connection.vendor == "postgresql"


def redis_available() -> bool:
    """Whether the test Redis answers."""
    try:
        import redis

        return bool(redis.Redis.from_url(REDIS_TEST_URL, socket_timeout=1).ping())
    except Exception:
        return False


def use_broker(url: str, transport_options: dict[str, Any] | None = None) -> None:
    """Point this process's Celery app at another broker (drops cached connections)."""
    from core.celery import app

    app.conf.broker_url = url
    app.conf.broker_transport_options = transport_options or {}
    app._pool = None
    app.amqp._producer_pool = None


def filesystem_broker_options(data_dir: Path) -> dict[str, Any]:
    """Transport options of the filesystem broker under ``data_dir`` (same layout as core.settings)."""
    broker = data_dir / "broker"
    for sub in ("queue", "processed", "control"):
        (broker / sub).mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(broker / "queue"),
        "data_folder_out": str(broker / "queue"),
        "processed_folder": str(broker / "processed"),
        "control_folder": str(broker / "control"),
        "store_processed": False,
    }


@dataclass(frozen=True)
class Hint:
    """One task message taken off the broker: the task's name, its arguments, and whether it is delayed
    (sent with a countdown: Celery's ``eta`` header)."""

    task: str
    args: list[Any]
    delayed: bool


def drain_hints() -> list[Hint]:
    """Take every message off the broker's default queue (whatever broker this process uses now) and
    return them in order; nothing runs."""
    from django.conf import settings

    from core.celery import app

    taken: list[Hint] = []
    with app.connection_for_write() as conn:
        queue = conn.SimpleQueue(settings.CELERY_TASK_DEFAULT_QUEUE)
        try:
            while True:
                try:
                    message = queue.get(block=False)
                except queue.Empty:
                    break
                taken.append(
                    Hint(message.headers["task"], list(message.payload[0]), bool(message.headers.get("eta")))
                )
                message.ack()
        finally:
            queue.close()
    return taken


def zip_player(name: str) -> bytes:
    """An example player folder (``random``, ``minimax``, ``broken/illegal_action``...) as zip bytes."""
    from core.management.commands.load_example_players import zip_folder

    return zip_folder(EXAMPLES / name)


def run_pipeline_inline(revision: Any) -> Any:
    """Run the revision's queued build and then its smoke test in this process (no worker)."""
    from builder.tasks import build_revision
    from core.models import Build, SmokeTest
    from duel_runner.tasks import smoke_test_revision

    build = Build.objects.get(revision=revision, state="QUEUED")
    build_revision(build.pk)
    smoke = SmokeTest.objects.filter(revision=revision, state="QUEUED").first()
    if smoke is not None:
        smoke_test_revision(smoke.pk)
    revision.refresh_from_db()
    return revision


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail with ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


@dataclass
class WorkerProcess:
    """A ``celery -A core worker -B`` subprocess in its own process group."""

    proc: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        """Everything the worker printed so far."""
        return self.log_path.read_text(errors="replace")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the worker's whole process group (children and agents included)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)

    def stop(self) -> None:
        """Warm shutdown, then SIGKILL if it lingers."""
        if self.proc.poll() is None:
            self.kill(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=3)
        self.kill(signal.SIGKILL)
        self.proc.wait(timeout=10)


@dataclass
class BrokerInfo:
    """How workers and this test process reach the broker, and how to wipe it."""

    url: str
    options: dict[str, Any]
    wipe: Callable[[], None]


def worker_database_url() -> str:
    from django.db import connection

    s = connection.settings_dict
    if connection.vendor == "postgresql":
        auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
        return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    return "sqlite:///" + str(Path(s["NAME"]).resolve())


def duel_json(n: int = 2, result: str = "PLAYER_1_WIN") -> dict[str, Any]:
    """A finished duel JSON (rl-arena format): player 1 wins ``n`` matches."""
    match = {
        "result": "PLAYER_1_WIN",
        "error_msg": "",
        "error_kind": "",
        "player_1_score": 1.0,
        "player_2_score": 0.0,
        "first_player": "PLAYER_1",
        "states": [{"board": [0] * 9}],
        "actions": [4],
        "move_times": [0.001],
    }
    return {
        "result": result,
        "error_msg": "",
        "num_matches": n,
        "player_1_errors": 0,
        "player_2_errors": 0,
        "other_errors": 0,
        "player_1_wins": n,
        "player_2_wins": 0,
        "draws": 0,
        "player_1_score": float(n),
        "player_2_score": 0.0,
        "matches": [dict(match) for _ in range(n)],
        "player_1_log": "p1 log",
        "player_2_log": "p2 log",
    }
