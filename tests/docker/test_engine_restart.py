"""Fault injection: the Docker engine restarts in the middle of a duel.

That is an infrastructure failure: the duel task re-queues the duel (charged to nobody), the retry plays
it in full and records it exactly once, and no agent container is left behind. The engine is stopped with
SIGTERM (as an operator or a package upgrade would) and started again by ``scripts/ensure_docker.sh``;
whatever happens, the test leaves an engine running for the tests that follow.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from dockertest_support import REPO

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ENSURE_DOCKER = REPO / "scripts" / "ensure_docker.sh"
MATCHES = 12
#: A legal but slow Connect Four player: a duel of MATCHES matches lasts a few seconds.
SLOW_PLAYER = """
import time


class Player:
    def __init__(self, train_mode=False):
        self.turn = 0

    def start(self, state, valid_actions):
        return self.step(state, valid_actions, 0.0)

    def step(self, state, valid_actions, prev_reward):
        time.sleep(0.02)
        self.turn += 1
        actions = [int(a) for a in valid_actions]
        return actions[self.turn % len(actions)]

    def end(self, state, prev_reward):
        pass
"""


def _engine_answers() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0


def _ensure_engine() -> None:
    subprocess.run(["bash", str(ENSURE_DOCKER)], capture_output=True, timeout=120, check=False)


def _dockerd_pids() -> list[int]:
    found = subprocess.run(["pgrep", "-x", "dockerd"], capture_output=True, text=True, check=False)
    return [int(pid) for pid in found.stdout.split()]


def _restart_engine() -> None:
    """SIGTERM dockerd, wait until it is gone, start it again the way ensure_docker.sh does."""
    pids = _dockerd_pids()
    assert pids, "dockerd is not running as a local process: cannot restart it"
    for pid in pids:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while _dockerd_pids() and time.monotonic() < deadline:
        time.sleep(0.1)
    _ensure_engine()


def _labelled(label: str) -> list[str]:
    found = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=rl-arena.duel={label}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return found.stdout.split()


@pytest.fixture
def engine_restored() -> Any:
    """Whatever the test does, an engine answers afterwards."""
    if not _dockerd_pids():
        pytest.skip("dockerd does not run on this machine (cannot restart it)")
    yield
    _ensure_engine()
    assert _engine_answers(), "the Docker engine did not come back"


@pytest.fixture
def memory_broker() -> Any:
    """Queue hints go to an in-memory broker (no stray message reaches a real worker)."""
    from core.celery import app

    saved = (app.conf.broker_url, app.conf.broker_transport_options)
    app.conf.broker_url, app.conf.broker_transport_options = "memory://", {}
    app._pool = None
    app.amqp._producer_pool = None
    yield
    app.conf.broker_url, app.conf.broker_transport_options = saved
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def slow_revisions(build_dir, tmp_path: Path, settings: Any, memory_broker: None) -> tuple[Any, Any]:
    """Two ELIGIBLE Connect Four revisions running the slow legal player in Docker."""
    from core.actions import sync_environments
    from core.management.commands.sync_environments import game_infos
    from core.models import Competitor, Environment, Revision, User

    folder = tmp_path / "slow_player"
    folder.mkdir()
    (folder / "player.py").write_text(SLOW_PLAYER)
    image = build_dir(folder)
    settings.SANDBOX = "docker"
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    sync_environments(game_infos())
    environment = Environment.objects.get(slug="connect-four")
    revisions = []
    for seat in (1, 2):
        owner = User.objects.create_user(email=f"u{uuid.uuid4().hex[:10]}@example.com", password=None)
        competitor = Competitor.objects.create(owner=owner, environment=environment, name=f"slow-{seat}")
        revisions.append(
            Revision.objects.create(
                competitor=competitor,
                version=1,
                state=Revision.State.ELIGIBLE,
                agent_ref=image,
                zip_path="slow.zip",
                content_hash="0" * 64,
            )
        )
    return revisions[0], revisions[1]


def test_an_engine_restart_mid_duel_is_retried_and_never_charged(slow_revisions, engine_restored) -> None:
    from core.actions import schedule_duel
    from core.models import Duel
    from duel_runner.tasks import run_duel

    duel = schedule_duel(*slow_revisions, num_matches=MATCHES)
    label = str(duel.pk)
    restarted = threading.Event()

    def restart_mid_duel() -> None:
        deadline = time.monotonic() + 60
        while len(_labelled(label)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # a few matches in
        try:
            _restart_engine()
        finally:
            restarted.set()

    injector = threading.Thread(target=restart_mid_duel, daemon=True)
    injector.start()
    try:
        first = run_duel(duel.pk)
    finally:
        restarted.wait(120)
        injector.join(10)
    assert _engine_answers()

    duel.refresh_from_db()
    assert first == "infrastructure error", duel.failure_reason
    assert duel.state == Duel.State.QUEUED and duel.attempts == 1
    assert duel.matches.count() == 0  # nothing recorded, nobody charged
    assert "engine" in duel.failure_reason.lower() or "docker" in duel.failure_reason.lower()

    assert run_duel(duel.pk) == "recorded"
    assert run_duel(duel.pk) == "not claimed"  # a duplicate delivery changes nothing
    duel.refresh_from_db()
    assert duel.state == Duel.State.FINISHED
    assert duel.matches.count() == MATCHES
    assert duel.other_errors == 0
    assert not duel.matches.filter(result__in=["PLAYER_1_ERROR", "PLAYER_2_ERROR"]).exists()
    assert _labelled(label) == []
