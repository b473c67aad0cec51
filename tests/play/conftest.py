"""Fixtures for live play and challenges: games, users, competitors whose playing revision is an example
player folder (the local sandbox runs a folder directly, so no build is needed), and the agent's task
running in a thread of this process."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")

import django
import pytest

django.setup()

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "example_players"


@pytest.fixture(autouse=True)
def data_dir(settings: Any, tmp_path: Path) -> Path:
    """Own DATA_DIR, the local sandbox, an in-memory broker (hints go nowhere), short play timeouts."""
    from core.celery import app

    path = tmp_path / "data"
    path.mkdir()
    settings.DATA_DIR = path
    settings.SANDBOX = "local"
    settings.PLAY_POLL_SECONDS = 0.05
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    app.conf.broker_url = "memory://"
    app.conf.broker_transport_options = {}
    app._pool = None
    app.amqp._producer_pool = None
    return path


@pytest.fixture
def games(db: Any) -> dict[str, Any]:
    """Every game synced into the database, by slug."""
    from core.actions import sync_environments
    from core.management.commands.sync_environments import game_infos
    from core.models import Environment

    sync_environments(game_infos())
    return {e.slug: e for e in Environment.objects.all()}


@pytest.fixture
def make_user(db: Any) -> Callable[..., Any]:
    """Factory of users."""
    from core.models import User

    def make(**extra: Any) -> Any:
        return User.objects.create_user(
            email=f"u{uuid.uuid4().hex[:10]}@example.com", password="pw-12345678", **extra
        )

    return make


@pytest.fixture
def make_competitor(games: dict[str, Any], make_user: Callable[..., Any]) -> Callable[..., Any]:
    """Factory: a competitor whose playing (ELIGIBLE) revision runs ``example_players/<player>``."""
    from core.models import Competitor, Revision

    def make(
        player: str = "random",
        env: str = "connect-four",
        owner: Any = None,
        public: bool = True,
        name: str = "",
    ) -> Any:
        comp = Competitor.objects.create(
            owner=owner or make_user(),
            environment=games[env],
            name=name or f"{player.replace('/', '-')}-{uuid.uuid4().hex[:4]}",
            is_public=public,
            next_version=2,
        )
        rev = Revision.objects.create(
            competitor=comp,
            version=1,
            state=Revision.State.ELIGIBLE,
            agent_ref=str(EXAMPLES / player),
            zip_path="x.zip",
            content_hash="0" * 64,
            is_public=public,
        )
        comp.current_revision = rev
        comp.save(update_fields=["current_revision"])
        return comp

    return make


class AgentThread:
    """``duel_runner.play_session`` running in a thread, as a worker would run it."""

    def __init__(self, session_id: int) -> None:
        self.result: str | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(session_id,), daemon=True)
        self.thread.start()

    def _run(self, session_id: int) -> None:
        from django.db import connection

        from duel_runner.live_play import play_session

        try:
            self.result = play_session(session_id)
        except BaseException as exc:  # surfaced by join()
            self.error = exc
        finally:
            connection.close()

    def join(self, timeout: float = 60) -> str | None:
        """Wait for the task to return; re-raise what it raised."""
        self.thread.join(timeout)
        if self.thread.is_alive():
            pytest.fail(f"the play task did not end within {timeout} s")
        if self.error is not None:
            raise self.error
        return self.result


@pytest.fixture
def run_agent(transactional_db: Any) -> Iterator[Callable[[int], AgentThread]]:
    """Start the agent's task for a session in a thread; every thread is joined at teardown."""
    threads: list[AgentThread] = []

    def start(session_id: int) -> AgentThread:
        t = AgentThread(session_id)
        threads.append(t)
        return t

    yield start
    for t in threads:
        t.thread.join(30)
