"""Fixtures for the core suite: factories, inline pipeline helpers, and real Celery worker processes.

The database is whatever ``DATABASE_URL`` says (Postgres in CI, SQLite when unset), so the same suite runs
on both. Worker processes get the *test* database's URL, a broker (Redis db 15 with Postgres, the
filesystem broker in the test's DATA_DIR with SQLite) and short leases.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")

import django
import pytest

# Until pyproject's [tool.pytest.ini_options] sets DJANGO_SETTINGS_MODULE, configure Django here so test
# modules can import models at collection time.
django.setup()

from core_testlib import (  # noqa: E402
    REDIS_TEST_URL,
    REPO,
    WORKER_LEASE_S,
    BrokerInfo,
    WorkerProcess,
    filesystem_broker_options,
    is_postgres,
    redis_available,
    run_pipeline_inline,
    use_broker,
    wait_for,
    worker_database_url,
    zip_player,
)


@pytest.fixture(autouse=True)
def data_dir(settings: Any, tmp_path: Path) -> Path:
    """Each test gets its own DATA_DIR, an in-memory broker (no stray messages) and short leases."""
    path = tmp_path / "data"
    path.mkdir()
    settings.DATA_DIR = path
    settings.LEASE_SECONDS = WORKER_LEASE_S
    settings.HEARTBEAT_SECONDS = 1.0
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast test users
    use_broker("memory://")
    return path


@pytest.fixture(autouse=True)
def fresh_health_probe() -> Iterator[None]:
    """The worker health probe's answer is cached per process: no test sees another test's answer."""
    from core.jobs import health

    health._cache.clear()
    yield
    health._cache.clear()


@pytest.fixture
def environments(db: Any) -> dict[str, Any]:
    """Every game of ``environments/`` synced into the database, by slug."""
    from core.actions import sync_environments
    from core.management.commands.sync_environments import game_infos
    from core.models import Environment

    sync_environments(game_infos())
    return {e.slug: e for e in Environment.objects.all()}


@pytest.fixture
def make_user(db: Any) -> Callable[..., Any]:
    """Factory of users with unique e-mail addresses."""
    from core.models import User

    def make(**extra: Any) -> Any:
        return User.objects.create_user(email=f"u{uuid.uuid4().hex[:10]}@example.com", password=None, **extra)

    return make


@pytest.fixture
def make_revision(environments: dict[str, Any], make_user: Callable[..., Any]) -> Callable[..., Any]:
    """Factory of revisions in a given state without building anything (for action tests)."""
    from core.models import Competitor, Revision

    def make(state: str = "ELIGIBLE", env: str = "tic-tac-toe", competitor: Any = None, **extra: Any) -> Any:
        if competitor is None:
            competitor = Competitor.objects.create(
                owner=make_user(), environment=environments[env], name=f"bot-{uuid.uuid4().hex[:6]}"
            )
        version = competitor.next_version
        competitor.next_version += 1
        competitor.save(update_fields=["next_version"])
        values = {"agent_ref": "/nonexistent/agent", "zip_path": "x.zip", "content_hash": "0" * 64, **extra}
        return Revision.objects.create(competitor=competitor, version=version, state=state, **values)

    return make


@pytest.fixture
def eligible(make_user: Callable[..., Any], environments: dict[str, Any]) -> Callable[..., Any]:
    """Factory: upload an example player and build + smoke-test it inline; returns the revision."""
    from core.actions import submit_revision

    owner = make_user()

    def make(player: str = "random", env: str = "tic-tac-toe", name: str | None = None) -> Any:
        revision = submit_revision(owner, env, name or player.replace("/", "-"), zip_player(player))
        return run_pipeline_inline(revision)

    return make


@pytest.fixture
def broker(data_dir: Path) -> Iterator[BrokerInfo]:
    """Redis db 15 when the suite runs on Postgres, else the filesystem broker in DATA_DIR."""
    if is_postgres():
        if not redis_available():
            pytest.skip("Redis is not reachable at " + REDIS_TEST_URL)
        import redis

        client = redis.Redis.from_url(REDIS_TEST_URL)
        client.flushdb()
        info = BrokerInfo(REDIS_TEST_URL, {"visibility_timeout": 3600}, client.flushdb)
    else:
        options = filesystem_broker_options(data_dir)

        def wipe() -> None:
            for f in Path(options["data_folder_in"]).iterdir():
                f.unlink(missing_ok=True)

        info = BrokerInfo("filesystem://localhost//", options, wipe)
    use_broker(info.url, info.options)
    yield info
    use_broker("memory://")
    if is_postgres():
        info.wipe()


@pytest.fixture
def start_worker(
    transactional_db: Any, broker: BrokerInfo, data_dir: Path, tmp_path: Path, settings: Any
) -> Iterator[Callable[..., WorkerProcess]]:
    """Factory: start a real worker (with the beat scheduler running the reaper every second) against the
    test database. All workers are stopped at teardown, before the database is flushed."""
    settings.STALE_QUEUED_SECONDS = 2
    workers: list[WorkerProcess] = []

    def start(*, beat: bool = True, queues: str = "", **env_overrides: str) -> WorkerProcess:
        """``beat=False``: no beat scheduler in this worker (no reaper: it recovers what it can alone).
        ``queues``: the queues it consumes (default: the default queue)."""
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "core.settings",
            "DATABASE_URL": worker_database_url(),
            "CELERY_BROKER_URL": broker.url,
            "DATA_DIR": str(data_dir),
            "SANDBOX": "local",
            "LEASE_SECONDS": str(WORKER_LEASE_S),
            "HEARTBEAT_SECONDS": "1",
            "REAPER_INTERVAL_SECONDS": "1",
            "STALE_QUEUED_SECONDS": "2",
            "WORKER_CONCURRENCY": "2",
            "SECRET_KEY": "test-secret-key-" + "x" * 40,
            "PYTHONUNBUFFERED": "1",
            **env_overrides,
        }
        log_path = tmp_path / f"worker-{len(workers)}.log"
        name = f"test{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
        cmd = [sys.executable, "-m", "celery", "-A", "core", "worker", "-l", "info", "-n", name]
        cmd += ["-Q", queues or settings.CELERY_TASK_DEFAULT_QUEUE, "--without-mingle", "--without-gossip"]
        if beat:
            cmd += ["--beat", "-s", str(data_dir / f"beat-{len(workers)}")]
        with open(log_path, "wb") as log_file:
            proc = subprocess.Popen(
                cmd, cwd=REPO, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
            )
        worker = WorkerProcess(proc, log_path)
        workers.append(worker)
        wait_for(lambda: " ready." in worker.log() or proc.poll() is not None, 90, "the worker to start")
        if proc.poll() is not None:
            pytest.fail("worker exited at start:\n" + worker.log()[-5000:])
        return worker

    yield start
    for worker in workers:
        worker.stop()
