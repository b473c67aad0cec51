"""The hostile battery: every agent in example_players/hostile/ against the real Docker sandbox.

The battery runs twice: with a fresh container per seat per duel (``cold``) and with warm containers
reused between duels (``warm``, ``run_duel/sandbox/docker_warm.py``), where a hostile agent's container
serves the next duel of that agent only once its factory cleaned it.

Each hostile agent sits in seat PLAYER_1 against the random player, for a short duel under tight limits.
Specification per behaviour: the hostile seat is charged with the expected error kind (or, for behaviours
the sandbox contains, plays on unaffected), the opponent is never charged, no container is left behind,
the runner's memory stays bounded, and a normal duel afterwards runs fine.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from dockertest_support import HOSTILE, containers_with_label, rss_mb

from run_duel.api import play_duel
from run_duel.sandbox.base import LaunchSpec, Limits

pytestmark = pytest.mark.docker

LIMITS = Limits(
    memory_mb=128,
    cpus=1.0,
    pids=32,
    file_size_mb=8,
    open_files=64,
    tmpfs_mb=16,
    log_bytes=64 * 1024,
    init_timeout=6.0,
    move_timeout=1.0,
)
CANARY = "RL_ARENA_TEST_CANARY_SECRET"

#: behaviour -> the error kind charged to the hostile seat, or None when it must play on unaffected.
EXPECTED = {
    "infinite_loop": "TIMEOUT",
    "sleep_forever": "TIMEOUT",
    "hang_at_import": "TIMEOUT",
    "slow_drip": "TIMEOUT",
    "memory_bomb": "MEMORY_LIMIT",
    "malformed_json": "BAD_OUTPUT",
    "malformed_nan": "BAD_OUTPUT",
    "malformed_utf8": "BAD_OUTPUT",
    "malformed_huge_int": "INVALID_ACTION",
    "protocol_flood": "OUTPUT_LIMIT",
    "crash_exception": "CRASH",
    "crash_exit": "CRASH",
    "crash_segfault": "CRASH",
    "close_socket": "CRASH",
    "fork_bomb": None,
    "thread_bomb": None,
    "fill_tmp": None,
    "write_outside_tmp": None,
    "huge_sparse_file": None,
    "stdout_flood": None,
    "stderr_flood": None,
    "close_stdio": None,
    "network": None,
    "signal_others": None,
    "privilege_escalation": None,
    "read_secrets": None,
    "fd_exhaustion": None,
    "cpu_hog": None,
}


def test_every_hostile_agent_has_an_expected_outcome() -> None:
    folders = {p.name for p in HOSTILE.iterdir() if (p / "player.py").is_file()}
    assert folders == set(EXPECTED)


def _report(duel: dict) -> dict:
    """The HOSTILE_REPORT line the agent wrote on stderr (kept in the duel's player_1_log)."""
    for line in duel["player_1_log"].splitlines():
        if line.startswith("HOSTILE_REPORT "):
            return json.loads(line[len("HOSTILE_REPORT ") :])
    raise AssertionError(f"no HOSTILE_REPORT in the log:\n{duel['player_1_log'][-2000:]}")


def _check_report(name: str, report: dict, duel: dict) -> None:
    """Behaviour-specific proof that the sandbox contained the attempt."""
    if name == "fork_bomb":
        assert report["forks"] < LIMITS.pids
        assert report["error"] == "Resource temporarily unavailable"
    elif name == "thread_bomb":
        assert report["threads"] < LIMITS.pids
    elif name == "fill_tmp":
        assert report["written"] <= LIMITS.tmpfs_mb * 1024 * 1024
        assert report["error"] == "No space left on device"
    elif name == "write_outside_tmp":
        assert "WRITTEN" not in report.values(), report
    elif name == "huge_sparse_file":
        assert report == {"seek_write": "File too large", "truncate": "File too large"}
    elif name == "network":
        assert report["interfaces"] == ["lo"]
        assert report["attempts"]["dns example.com"].startswith("gaierror")
        for target, outcome in report["attempts"].items():
            assert "CONNECTED" not in outcome and "RESOLVED" not in outcome, (target, outcome)
        assert "172.17.0.1:80" in report["attempts"]  # the host gateway was tried (and failed)
    elif name == "signal_others":
        # Only its own container's processes are visible: the init process and the harness.
        assert len(report["visible"]) <= 2, report["visible"]
        assert all("arena_harness" in cmd or "docker-init" in cmd for cmd in report["visible"].values())
    elif name == "privilege_escalation":
        facts = ("uid", "euid", "CapEff", "CapPrm", "NoNewPrivs", "Seccomp")
        attempts = {k: v for k, v in report.items() if k not in facts}
        assert report["uid"] == report["euid"] == 10001
        assert all(str(v).startswith("FAILED") for v in attempts.values()), json.dumps(attempts)
        assert int(report["CapEff"], 16) == 0
        assert report["NoNewPrivs"] == "1"
        assert report["Seccomp"] == "2"  # Docker's default seccomp filter is active
    elif name == "read_secrets":
        seen = json.dumps(report)
        assert CANARY not in seen
        assert "canary-value" not in seen
        assert set(report["environ"]) <= {
            "PATH",
            "HOSTNAME",
            "HOME",
            "LANG",
            "PYTHONDONTWRITEBYTECODE",
            "PYTHONUNBUFFERED",
            "OPENBLAS_NUM_THREADS",
            "OMP_NUM_THREADS",
            "MKL_NUM_THREADS",
            "ARENA_AGENT_FORMAT",  # which adapter the harness applies (docs/PROTOCOL.md): not a secret
            "ARENA_GAME",
        }
    elif name == "fd_exhaustion":
        assert report["opened"] < LIMITS.open_files
        assert report["error"] == "Too many open files"
    elif name == "cpu_hog":
        assert report["spinners"] == 2
        if duel["cpus"] is not None:  # pinned (two or more free cores): the hog never leaves its duel's core
            assert report["cpus"] == report["spinner_cpus"] == duel["cpus"], (report, duel["cpus"])


@pytest.fixture(scope="module")
def warm_docker_sandbox(docker_engine: None):
    """One Docker sandbox reusing containers, for the module (its idle containers removed at the end)."""
    from run_duel.sandbox.docker import DockerSandbox
    from run_duel.sandbox.docker_warm import ReusePolicy

    runtime = Path(tempfile.mkdtemp(prefix="rl-arena-warm-"))
    sandbox = DockerSandbox(runtime_dir=runtime, reuse=ReusePolicy(enabled=True))
    yield sandbox
    sandbox.close()
    sandbox.pool.close()
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture(params=["cold", "warm"])
def sandbox(request: pytest.FixtureRequest):
    """The battery's sandbox: a fresh container per seat (``cold``) or warm containers (``warm``)."""
    name = "docker_sandbox" if request.param == "cold" else "warm_docker_sandbox"
    return request.getfixturevalue(name)


def _check_warm_pool(sandbox) -> None:
    """Every warm container this process still runs is an idle one of the pool (none leaked), and each
    hosts the one image it was made for."""
    from run_duel.sandbox.docker_client import get_client
    from run_duel.sandbox.docker_config import LABEL
    from run_duel.sandbox.docker_pools import _POOL_REMOVER

    _POOL_REMOVER[os.getpid()].join()  # retired containers are removed in the background
    running = [  # this sandbox's pool's containers (other tests of the process may have pools of their own)
        summary
        for summary in get_client().api.containers(
            all=True, filters={"label": [f"{LABEL}.warm=1", f"{LABEL}.owner-pid={os.getpid()}"]}
        )
        if any(m.get("Source", "").startswith(sandbox.pool.root) for m in summary.get("Mounts") or [])
    ]
    idle = {container.container_id: container.key[0] for container in sandbox.pool.idle()}
    assert {c["Id"] for c in running} == set(idle)
    assert all(idle[c["Id"]] == c["Image"] for c in running)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_hostile_agent_is_contained(
    name: str, build_dir, random_image: str, sandbox, duel_label: str, monkeypatch
) -> None:
    docker_sandbox = sandbox
    monkeypatch.setenv(CANARY, "canary-value")  # in the runner's environment: must never reach an agent
    image = build_dir(HOSTILE / name)
    rss_before = rss_mb()

    duel = play_duel(
        "tic-tac-toe",
        docker_sandbox,
        LaunchSpec(agent=image, labels={"duel": duel_label, "seat": "1"}),
        LaunchSpec(agent=random_image, labels={"duel": duel_label, "seat": "2"}),
        matches=2,
        limits=LIMITS,
    )

    results = [m["result"] for m in duel["matches"]]
    kinds = [m.get("error_kind") for m in duel["matches"]]
    assert "PLAYER_2_ERROR" not in results, duel["matches"]
    assert "OTHER_ERROR" not in results, [m["error_msg"] for m in duel["matches"]]
    expected = EXPECTED[name]
    if expected is None:
        assert "PLAYER_1_ERROR" not in results, [m["error_msg"] for m in duel["matches"]]
    else:
        assert results == ["PLAYER_1_ERROR", "PLAYER_1_ERROR"], [m["error_msg"] for m in duel["matches"]]
        assert kinds == [expected, expected], [m["error_msg"] for m in duel["matches"]]
    if name in ("stdout_flood", "stderr_flood"):
        assert len(duel["player_1_log"]) <= 20 * 1024
    if EXPECTED[name] is None and name not in ("stdout_flood", "stderr_flood", "close_stdio"):
        _check_report(name, _report(duel), duel)

    assert containers_with_label("duel", duel_label) == []
    if sandbox.pool is not None:
        _check_warm_pool(sandbox)
    assert rss_mb() - rss_before < 64

    after = play_duel(
        "tic-tac-toe",
        docker_sandbox,
        LaunchSpec(agent=random_image, labels={"duel": duel_label, "seat": "1"}),
        LaunchSpec(agent=random_image, labels={"duel": duel_label, "seat": "2"}),
        matches=1,
        limits=LIMITS,
    )
    assert after["matches"][0]["result"] in ("PLAYER_1_WIN", "PLAYER_2_WIN", "DRAW")
    assert containers_with_label("duel", duel_label) == []
    if sandbox.pool is not None:
        _check_warm_pool(sandbox)
