"""The fleet of the multi-machine suite, started once per module (see clusterlib.py and README.md).

The fleet outlives single tests, so it cannot live inside pytest-django's per-test transactions or
flushes: the ``cluster`` fixture opens database access for the whole module, and flushes the test
database itself at the end (what a transactional test does after each test).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CORE_TESTS = Path(__file__).resolve().parents[1] / "core"
sys.path.insert(0, str(CORE_TESTS))

from clusterlib import (  # noqa: E402
    LAUNCH,
    NODE_PREFIX,
    REGISTRY_SCRIPT,
    Cluster,
    Node,
    Process,
    purge_leftover_nodes,
    run_script,
    spawn,
    wait_until,
)
from core_testlib import REDIS_TEST_URL, redis_available, use_broker, worker_database_url, zip_player  # noqa: E402

DELIBERATE = Path(__file__).resolve().parents[1] / "agents" / "deliberate"
#: The agents every test uses, all built on node A: name -> example player folder.
AGENTS = {"random": "random", "minimax": "minimax", "slow-1": str(DELIBERATE), "slow-2": str(DELIBERATE)}
GAME = "tic-tac-toe"


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _cannot_run(reason: str) -> None:
    if _in_ci():
        pytest.fail(reason)
    pytest.skip(reason)


def _requirements() -> None:
    if os.geteuid() != 0:
        _cannot_run("the cluster suite starts Docker engines: it needs root")
    for tool in ("dockerd", "containerd", "docker", "unshare"):
        if shutil.which(tool) is None:
            _cannot_run(f"{tool} is not installed (run scripts/ensure_docker.sh)")
    if not redis_available():
        _cannot_run(f"Redis is not reachable at {REDIS_TEST_URL}")


def _worker_env(data_dir: Path, registry: str) -> dict[str, str]:
    """What every process of the fleet gets (each worker adds its own DOCKER_HOST, runtime folder and
    DATA_DIR: ``data_dir`` is the web host's, where the test process uploads, and the beat's)."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "core.settings",
        "DATABASE_URL": worker_database_url(),
        "CELERY_BROKER_URL": REDIS_TEST_URL,
        "DATA_DIR": str(data_dir),
        "SANDBOX": "docker",
        # The suite follows each duel's own containers (rl-arena.duel label): no warm containers.
        "DUEL_SANDBOX_REUSE": "off",
        "AGENT_REGISTRY": registry,
        "WORKER_CONCURRENCY": "2",
        # Generous leases: nothing here relies on a lease running out (workers never die, engines do), and
        # a loaded machine must not make the reaper take a duel from a live worker.
        "LEASE_SECONDS": "30",
        "HEARTBEAT_SECONDS": "1",
        "REAPER_INTERVAL_SECONDS": "1",
        "WORKER_HEALTH_INTERVAL_SECONDS": "0.5",
        "RETRY_BACKOFF_SECONDS": "0.5",
        "RETRY_BACKOFF_MAX_SECONDS": "2",
        # The suite schedules every duel itself: no matchmaking, no tournament editions.
        "TM_LADDER_QUEUE_TARGET": "0",
        "TM_CHECK_EDITIONS_INTERVAL_SECONDS": "86400",
        "SECRET_KEY": "cluster-test-secret-key-" + "x" * 40,
        "PYTHONUNBUFFERED": "1",
    }


def _build_agents(cluster: Cluster) -> dict[str, Any]:
    """Upload every agent of ``AGENTS`` and wait until each is ELIGIBLE (only node A's worker runs)."""
    from core.actions import submit_revision, sync_environments
    from core.management.commands.sync_environments import game_infos
    from core.models import Revision, User

    sync_environments(game_infos())
    revisions = {}
    for name, folder in AGENTS.items():
        owner = User.objects.create_user(email=f"{name}-{uuid.uuid4().hex[:8]}@example.com", password=None)
        revisions[name] = submit_revision(owner, GAME, name, zip_player(folder))
    ids = [r.pk for r in revisions.values()]
    done = ("ELIGIBLE", "BUILD_FAILED", "TEST_FAILED", "REJECTED")
    wait_until(
        lambda: Revision.objects.filter(pk__in=ids, state__in=done).count() == len(ids),
        300,
        "node A to build and smoke-test the agents",
        details=cluster.diagnose,
    )
    for revision in revisions.values():
        revision.refresh_from_db()
    failed = {n: (r.state, r.builds.last()) for n, r in revisions.items() if r.state != "ELIGIBLE"}
    assert not failed, f"agents not eligible: {failed}\n{cluster.diagnose()}"
    return revisions


@pytest.fixture(scope="session")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Node]]:
    """Two private Docker engines, ``a`` and ``b``, each with the agent base image; no workers yet.
    Purged (containers, processes, folders) at the end of the session."""
    _requirements()
    root = tmp_path_factory.mktemp("nodes")
    # Unix socket paths are limited to 107 bytes: the nodes' runtime folders live under a short path.
    runtime = Path(tempfile.mkdtemp(prefix="ct-", dir="/tmp"))
    found = {
        key: Node(name=f"{NODE_PREFIX}{os.getpid()}{key}", root=root / key, runtime=runtime / key)
        for key in ("a", "b")
    }
    try:
        purge_leftover_nodes()
        for node in found.values():
            node.root.mkdir()
            node.start_engine()
            node.prepare_engine()
        yield found
    finally:
        for node in found.values():
            if node.worker is not None:
                node.worker.stop()
        failures = [problem for node in found.values() if (problem := node.purge())]
        shutil.rmtree(runtime, ignore_errors=True)
        if failures:
            pytest.fail("\n".join(failures))


@pytest.fixture(scope="module")
def cluster(
    nodes: dict[str, Node],
    django_db_setup: Any,
    django_db_blocker: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cluster]:
    """The fleet: node A and node B with a worker each, the registry, one beat, and the agents of
    ``AGENTS``, built on node A before node B's worker starts."""
    from core_testlib import is_postgres
    from django.conf import settings
    from django.core.management import call_command

    root = tmp_path_factory.mktemp("cluster")
    data_dir = root / "data"
    data_dir.mkdir()
    registry = os.environ.get("REGISTRY_ADDR", "127.0.0.1:5000")
    saved_data_dir = settings.DATA_DIR
    with django_db_blocker.unblock(), _test_database():
        if not is_postgres():
            _cannot_run("workers on several machines share one database: the cluster suite needs PostgreSQL")
        settings.DATA_DIR = data_dir
        import redis

        redis.Redis.from_url(REDIS_TEST_URL).flushdb()
        use_broker(REDIS_TEST_URL, {"visibility_timeout": 7200})
        fleet = Cluster(
            nodes=nodes,
            env=_worker_env(data_dir, registry),
            queue=settings.CELERY_TASK_DEFAULT_QUEUE,
            registry=registry,
            data_dir=data_dir,
        )
        try:
            run_script(str(REGISTRY_SCRIPT), env={"REGISTRY_ADDR": registry})
            for node in nodes.values():
                if not node.engine_running():
                    node.start_engine()
            fleet.beat = _start_beat(fleet, root)
            nodes["a"].start_worker(fleet.env, fleet.queue)
            fleet.agents = _build_agents(fleet)
            nodes["b"].start_worker(fleet.env, fleet.queue)
            yield fleet
        finally:
            for node in nodes.values():
                if node.worker is not None:
                    node.worker.stop()
                    node.worker = None
            if fleet.beat is not None:
                fleet.beat.stop()
            redis.Redis.from_url(REDIS_TEST_URL).flushdb()
            use_broker("memory://")
            settings.DATA_DIR = saved_data_dir
            call_command("flush", interactive=False, verbosity=0)


@contextlib.contextmanager
def _test_database() -> Iterator[None]:
    """The test database. pytest-django creates it only when some collected test asks for ``db`` (or
    the ``django_db`` mark, which would also flush it after every test): alone, this suite creates it."""
    from django.db import connection
    from django.db.backends.base.creation import TEST_DATABASE_PREFIX
    from django.test.utils import setup_databases, teardown_databases

    name, test_name = connection.settings_dict["NAME"], connection.settings_dict["TEST"].get("NAME")
    if name == test_name or (not test_name and name.startswith(TEST_DATABASE_PREFIX)):
        yield  # set up by pytest-django for the other tests of this session
        return
    created = setup_databases(verbosity=0, interactive=False, aliases={"default"})
    try:
        yield
    finally:
        teardown_databases(created, verbosity=0)


def _start_beat(cluster: Cluster, root: Path) -> Process:
    """The one ``celery beat`` of the fleet (the reaper runs on whichever worker takes its message)."""
    cmd = [sys.executable, "-c", LAUNCH, "", sys.executable, "-m", "celery", "-A", "core", "beat"]
    cmd += ["-l", "info", "-s", str(root / "beat-schedule")]
    beat = spawn(cmd, cluster.env, root / "beat.log")
    wait_until(lambda: "beat: Starting" in beat.log() or not beat.alive(), 60, "celery beat to start")
    if not beat.alive():
        pytest.fail(f"celery beat exited at start:\n{beat.log()[-3000:]}")
    return beat
