"""What the training examples' tests share (test_client_train_sb3, test_client_train_rllib,
test_client_train_rated): an example's ``train.py`` loaded as a module, the client logged in, the quick
run's arguments, the checks of its checkpoints and of the exported agent folder, and a real worker."""

from __future__ import annotations

import importlib
import importlib.util
import io
import json
import os
import socket
import subprocess
import sys
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from rl_arena_client import cli
from rl_arena_client.api import load_config

from core.management.commands.load_example_players import EXAMPLES_DIR
from core.models import Revision
from tests.web.factories import PASSWORD

CORE_TESTS = Path(__file__).resolve().parents[1] / "core"
if str(CORE_TESTS) not in sys.path:
    sys.path.insert(0, str(CORE_TESTS))

from core_testlib import (  # noqa: E402
    REDIS_TEST_URL,
    REPO,
    WorkerProcess,
    redis_available,
    use_broker,
    wait_for,
    worker_database_url,
)

__all__ = ["wait_for"]


def train_module(example: str) -> ModuleType:
    """``example_players/<example>/train.py`` imported under a name of its own."""
    name = f"_test_{example}_train"
    spec = importlib.util.spec_from_file_location(name, EXAMPLES_DIR / example / "train.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def login(server: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """Alice logged in with the client (its config in a temp folder, the token in $RL_ARENA_TOKEN)."""
    monkeypatch.setenv("RL_ARENA_CONFIG", str(tmp_path / "config.json"))
    monkeypatch.setenv("RL_ARENA_PASSWORD", PASSWORD)
    code = cli.main(["--server", server, "login", "--email", "alice@example.com"], out=io.StringIO())
    assert code == 0
    token = load_config()["token"]
    monkeypatch.setenv("RL_ARENA_TOKEN", token)
    return token


def quick_args(train: ModuleType, server: str, tmp_path: Path, *extra: str) -> Any:
    """The example's ``--quick`` arguments against ``server``'s league, output under ``tmp_path``."""
    return train.parse_args(
        [
            *(
                "--quick",
                "--server",
                server,
                "--cache",
                str(tmp_path / "cache"),
                "--out",
                str(tmp_path / "out"),
            ),
            *("--minimax-depth", "0", "--poll", "0", *extra),
        ]
    )


def checkpoint_revisions(report: dict[str, Any], owner: Any, name: str) -> list[Revision]:
    """The competitor's revisions, checked to be the report's checkpoints, each a complete agent zip."""
    revisions = list(
        Revision.objects.filter(competitor__name=name, competitor__owner=owner).order_by("version")
    )
    assert [r.id for r in revisions] == [cp["revision_id"] for cp in report["checkpoints"]]
    return revisions


def zip_names(data_dir: Path, revision: Revision) -> set[str]:
    with zipfile.ZipFile(data_dir / revision.zip_path) as zf:
        return set(zf.namelist())


def check_exported_agent(out: Path, report: dict[str, Any]) -> None:
    """The exported folder is an agent the arena accepts (its smoke test), playing its ONNX model, which
    agrees with the numpy copy; ``training.json`` is the report."""
    assert json.loads((out / "training.json").read_text())["steps"] == report["steps"]
    assert cli.main(["check", "--env", "connect-four", str(out), "--no-bwrap"], out=io.StringIO()) == 0
    sys.path.insert(0, str(out))
    try:
        player = importlib.import_module("player")
        onnx_policy, numpy_policy = player.load_policy(str(out)), player.NumpyPolicy(str(out / "model.npz"))
    finally:
        sys.path.remove(str(out))
        sys.modules.pop("player", None)
    assert type(onnx_policy).__name__ == "OnnxPolicy"
    x = (np.random.default_rng(0).random((32, 6, 7, 2)) > 0.6).astype(np.float32)
    assert np.abs(onnx_policy.logits(x) - numpy_policy.logits(x)).max() < 1e-4


def league_played(report: dict[str, Any], names: set[str]) -> bool:
    """The run played the arena's agents ``names`` (fetched, run in the local sandbox)."""
    return set(report["league"]) >= names and sum(report["league"][n]["games"] for n in names) > 0


@pytest.fixture
def arena_worker(transactional_db: Any, data_dir: Path, tmp_path: Path) -> Iterator[WorkerProcess]:
    """A real Celery worker (local sandbox, beat: matchmaking every second) on the test database, Redis
    db 15 as the broker of it and of this process (the live server's hints)."""
    if not redis_available():
        pytest.skip("Redis is not reachable at " + REDIS_TEST_URL)
    import redis

    broker = redis.Redis.from_url(REDIS_TEST_URL)
    broker.flushdb()
    use_broker(REDIS_TEST_URL, {"visibility_timeout": 3600})
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "core.settings",
        "DATABASE_URL": worker_database_url(),
        "CELERY_BROKER_URL": REDIS_TEST_URL,
        "DATA_DIR": str(data_dir),
        "SANDBOX": "local",
        "TM_MATCHMAKE_INTERVAL_SECONDS": "1",
        "WORKER_CONCURRENCY": "2",
        "SECRET_KEY": "test-secret-key-" + "x" * 40,
        "PYTHONUNBUFFERED": "1",
    }
    log_path = tmp_path / "worker.log"
    cmd = [sys.executable, "-m", "celery", "-A", "core", "worker", "-l", "info"]
    cmd += [
        "-n",
        f"train{uuid.uuid4().hex[:8]}@{socket.gethostname()}",
        "--without-mingle",
        "--without-gossip",
    ]
    cmd += ["--beat", "-s", str(data_dir / "beat")]
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(
            cmd, cwd=REPO, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
    worker = WorkerProcess(proc, log_path)
    try:
        wait_for(lambda: " ready." in worker.log() or proc.poll() is not None, 90, "the worker to start")
        if proc.poll() is not None:
            pytest.fail("worker exited at start:\n" + worker.log()[-5000:])
        yield worker
    finally:
        worker.stop()
        use_broker("memory://")
        broker.flushdb()
