"""The Docker sandbox: container settings, lifecycle, logs, exit information and the orphan reaper."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from dockertest_support import HOSTILE, REPO, containers_with_label

from run_duel.sandbox.base import LaunchSpec, Limits, SandboxError
from run_duel.sandbox.docker_client import get_client
from run_duel.sandbox.docker_config import AGENT_UID
from run_duel.sandbox.orphans import reap_orphans

pytestmark = pytest.mark.docker

LIMITS = Limits(
    memory_mb=200, cpus=0.5, pids=40, file_size_mb=16, open_files=100, tmpfs_mb=24, log_bytes=4096
)


@pytest.fixture
def agent(docker_sandbox, random_image: str, duel_label: str):
    """A launched random agent (killed afterwards)."""
    proc = docker_sandbox.launch(
        LaunchSpec(
            agent=random_image, limits=LIMITS, labels={"duel": duel_label, "seat": "1"}, env={"X_SEED": "7"}
        )
    )
    yield proc
    proc.kill()


def test_container_settings_are_applied(agent) -> None:
    attrs = get_client().api.inspect_container(agent.container_id)
    host = attrs["HostConfig"]
    config = attrs["Config"]
    assert config["User"] == f"{AGENT_UID}:{AGENT_UID}"
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert host["CapAdd"] is None
    assert host["Privileged"] is False
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["PidsLimit"] == LIMITS.pids
    assert host["Memory"] == host["MemorySwap"] == LIMITS.memory_mb * 1024 * 1024
    assert host["NanoCpus"] == int(LIMITS.cpus * 1e9)
    assert host["Init"] is True
    assert host["AutoRemove"] is False
    assert host["LogConfig"]["Type"] == "json-file"
    assert "max-size" in host["LogConfig"]["Config"]
    assert host["Tmpfs"]["/tmp"].startswith("rw,noexec,nosuid,nodev,size=24m")
    ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in host["Ulimits"]}
    assert ulimits["fsize"] == (16 * 1024 * 1024,) * 2
    assert ulimits["nofile"] == (100, 100)
    assert ulimits["core"] == (0, 0)
    assert "nproc" in ulimits
    mounts = {m["Destination"]: m for m in attrs["Mounts"]}
    assert list(mounts) == ["/run/arena"]
    assert mounts["/run/arena"]["RW"] is False


def test_container_is_labelled_for_the_reaper(agent, duel_label: str) -> None:
    labels = get_client().api.inspect_container(agent.container_id)["Config"]["Labels"]
    assert labels["rl-arena"] == "agent"
    assert labels["rl-arena.duel"] == duel_label
    assert labels["rl-arena.seat"] == "1"
    assert labels["rl-arena.owner-pid"] == str(os.getpid())
    assert labels["rl-arena.owner-host"]


def test_environment_holds_only_what_the_spec_gives(agent) -> None:
    env = dict(
        item.split("=", 1) for item in get_client().api.inspect_container(agent.container_id)["Config"]["Env"]
    )
    assert env["X_SEED"] == "7"
    assert not {"DATABASE_URL", "SECRET_KEY", "DJANGO_SECRET_KEY", "HOME_OF_RUNNER"} & set(env)
    assert set(env) <= {
        "X_SEED",
        "PATH",
        "HOME",
        "LANG",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED",
        "OPENBLAS_NUM_THREADS",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "ARENA_AGENT_FORMAT",  # LaunchSpec.harness_env(): which adapter, for which game (not secrets)
        "ARENA_GAME",
    }
    assert env["ARENA_AGENT_FORMAT"] == "native"


def test_socket_folder_is_reachable_only_by_the_agent_user(agent) -> None:
    folder = Path(agent.socket_dir)
    info = folder.stat()
    assert (info.st_uid, info.st_gid) == (0, AGENT_UID)
    assert info.st_mode & 0o777 == 0o710
    assert folder.parent.stat().st_mode & 0o077 == 0


def test_the_agent_answers_over_the_socket(agent) -> None:
    assert agent.channel.recv(10, 4096) == {"type": "ready"}
    agent.channel.send({"type": "start", "state": [[0] * 3] * 3, "valid_actions": [4]}, 1)
    assert agent.channel.recv(5, 4096) == {"type": "action", "action": 4}
    assert agent.poll_exit() is None


def test_close_makes_the_agent_exit_cleanly(agent) -> None:
    assert agent.channel.recv(10, 4096)["type"] == "ready"
    agent.channel.send({"type": "close"}, 1)
    info = agent.wait_exit(10)
    assert info is not None
    assert (info.returncode, info.oom_killed) == (0, False)


def test_kill_removes_the_container_and_socket_folder_and_is_idempotent(agent, duel_label: str) -> None:
    assert len(containers_with_label("duel", duel_label)) == 1
    agent.kill()
    agent.kill()
    assert containers_with_label("duel", duel_label) == []
    assert not Path(agent.socket_dir).exists()


def test_stderr_is_kept_capped_to_the_tail(docker_sandbox, build_dir, duel_label: str) -> None:
    proc = docker_sandbox.launch(
        LaunchSpec(agent=build_dir(HOSTILE / "stderr_flood"), limits=LIMITS, labels={"duel": duel_label})
    )
    try:
        assert proc.channel.recv(10, 4096)["type"] == "ready"
        proc.channel.send({"type": "start", "state": [0], "valid_actions": [1]}, 1)
        assert proc.channel.recv(10, 4096)["action"] == 1
    finally:
        proc.kill()
    log = proc.stderr_log()
    assert log.startswith("[... ")
    assert len(log.encode()) <= LIMITS.log_bytes + 100


def test_a_missing_image_is_a_sandbox_error_and_leaves_nothing(docker_sandbox, duel_label: str) -> None:
    with pytest.raises(SandboxError, match="not found"):
        docker_sandbox.launch(LaunchSpec(agent="rl-arena-no-such-image:0", labels={"duel": duel_label}))
    assert containers_with_label("duel", duel_label) == []


def test_reaper_removes_containers_of_a_dead_owner_and_keeps_live_ones(
    agent, random_image: str, duel_label: str
) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid = dead.stdout.strip()
    orphan = get_client().api.create_container(
        random_image,
        labels={
            "rl-arena": "agent",
            "rl-arena.duel": duel_label,
            "rl-arena.owner-pid": dead_pid,
            "rl-arena.owner-start": "1",
            "rl-arena.owner-host": socket.gethostname(),
        },
    )["Id"]
    removed = reap_orphans(max_age_s=3600)
    assert orphan in removed
    assert agent.container_id not in removed
    assert [c["Id"] for c in containers_with_label("duel", duel_label)] == [agent.container_id]


def test_launch_many_starts_every_seat(docker_sandbox, random_image: str, duel_label: str) -> None:
    specs = [LaunchSpec(agent=random_image, labels={"duel": duel_label, "seat": str(n)}) for n in (1, 2)]
    procs = docker_sandbox.launch_many(specs)
    try:
        assert [p.channel.recv(10, 4096) for p in procs] == [{"type": "ready"}] * 2
        assert len({p.container_id for p in procs}) == 2
    finally:
        for proc in procs:
            proc.kill()
    assert containers_with_label("duel", duel_label) == []


def test_launch_many_is_all_or_nothing(docker_sandbox, random_image: str, duel_label: str) -> None:
    specs = [
        LaunchSpec(agent=random_image, labels={"duel": duel_label}),
        LaunchSpec(agent="rl-arena-no-such-image:0", labels={"duel": duel_label}),
    ]
    with pytest.raises(SandboxError, match="not found"):
        docker_sandbox.launch_many(specs)
    assert containers_with_label("duel", duel_label) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to an unprivileged user")
def test_a_non_root_referee_shares_the_socket_by_mode() -> None:
    """Without root (no chown), the launch folder is 0711 and the socket 0666 inside a 0700 parent."""
    tmp_path = Path(tempfile.mkdtemp(prefix="rl-arena-nonroot-"))
    tmp_path.chmod(0o777)
    code = (
        "import os, socket, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
        "from run_duel.sandbox.docker import _share_with_agent\n"
        f"folder = {str(tmp_path / 'launch')!r}\n"
        "os.mkdir(folder, 0o700)\n"
        "path = folder + '/agent.sock'\n"
        "listener = socket.socket(socket.AF_UNIX)\n"
        "listener.bind(path)\n"
        "_share_with_agent(folder, path)\n"
        "print(oct(os.stat(folder).st_mode & 0o777), oct(os.stat(path).st_mode & 0o777))\n"
    )
    try:
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0o711", "0o666"]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="placement needs at least two usable cores")
def test_a_duel_pins_both_containers_to_its_core_once_ready(
    docker_sandbox, build_dir, duel_label: str, private_cpu_slots: Path
) -> None:
    from run_duel.referee import play_duel

    spec = LaunchSpec(agent=build_dir(REPO / "tests" / "agents" / "affinity"), labels={"duel": duel_label})
    duel = play_duel("tic-tac-toe", docker_sandbox, spec, spec, matches=2, pin_cpus=True)
    assert duel["player_1_errors"] == duel["player_2_errors"] == duel["other_errors"] == 0, duel["error_msg"]
    assert duel["cpus"] is not None and len(duel["cpus"]) == 1
    for log in (duel["player_1_log"], duel["player_2_log"]):
        reports = [line for line in log.splitlines() if line.startswith("AFFINITY")]
        assert reports[-1] == f"AFFINITY {duel['cpus']} {duel['cpus']}", log[-2000:]
    assert containers_with_label("duel", duel_label) == []


# -- warm containers (run_duel/sandbox/docker_warm.py) ---------------------------------------------------

WARM_PROBE = REPO / "tests" / "agents" / "warm_probe"


@pytest.fixture
def warm_sandbox(docker_engine: None):
    """``warm_sandbox(**policy)``: a Docker sandbox reusing containers under that policy (its idle
    containers are removed afterwards)."""
    from run_duel.sandbox.docker import DockerSandbox
    from run_duel.sandbox.docker_warm import ReusePolicy

    runtime = Path(tempfile.mkdtemp(prefix="rl-arena-warm-"))  # short: socket paths are limited
    made = []

    def make(**policy: object) -> DockerSandbox:
        made.append(DockerSandbox(runtime_dir=runtime, reuse=ReusePolicy(enabled=True, **policy)))
        return made[-1]

    yield make
    for sandbox in made:
        sandbox.close()
        sandbox.pool.close()
    shutil.rmtree(runtime, ignore_errors=True)


def _probes(duel: dict) -> list[dict]:
    """The WARM_PROBE report of each seat (player 1, player 2)."""
    reports = []
    for seat in (1, 2):
        log = duel[f"player_{seat}_log"]
        lines = [line for line in log.splitlines() if line.startswith("WARM_PROBE ")]
        assert lines, f"no WARM_PROBE report from player {seat}: {duel['error_msg']}\n{log[-2000:]}"
        reports.append(json.loads(lines[-1][len("WARM_PROBE ") :]))
    return reports


def _container_of(report: dict) -> str:
    """The container id in the agent's memory cgroup path (the engine names the cgroup after it)."""
    line = next(line for line in report["cgroups"] if line.split(":")[1] == "memory")
    return line.rsplit("/", 1)[-1]


def _play(sandbox, spec: LaunchSpec, matches: int = 2) -> dict:
    from run_duel.referee import play_duel

    duel = play_duel("tic-tac-toe", sandbox, spec, spec, matches=matches, limits=LIMITS)
    assert duel["player_1_errors"] == duel["player_2_errors"] == duel["other_errors"] == 0, duel["error_msg"]
    return duel


def test_a_warm_container_serves_the_next_duel_with_nothing_of_the_last_one_left(
    warm_sandbox, build_dir, duel_label: str
) -> None:
    sandbox = warm_sandbox()
    spec = LaunchSpec(agent=build_dir(WARM_PROBE), labels={"duel": duel_label})

    first = _probes(_play(sandbox, spec))
    second = _probes(_play(sandbox, spec))

    containers = [_container_of(report) for report in first]
    assert len(set(containers)) == 2, "opponents (here: self-play) must never share a container"
    assert {_container_of(report) for report in second} == set(containers)  # the same two, reused
    assert sandbox.pool.created == 2
    for report in second:
        # The first duel left files in /tmp and /dev/shm and a daemon rewriting /tmp: none survived it.
        assert report["tmp"] == [] and report["shm"] == [] and report["sysv"] == [], report
        assert list(report["visible"]) == ["1"], report["visible"]  # only the factory (PID 1)
        assert "--warm" in report["visible"]["1"]
        # The agent sits in its own freezer cgroup: freezing the seat leaves the factory running.
        assert any(line.split(":")[1] == "freezer" and line.endswith("/agent") for line in report["cgroups"])
    assert [r["draw"] for r in first] != [r["draw"] for r in second]  # numpy is reseeded in every duel
    # A warm container carries no duel label (it serves many duels) and hosts one image.
    assert containers_with_label("duel", duel_label) == []
    for container in sandbox.pool.idle():
        attrs = get_client().api.inspect_container(container.container_id)
        assert attrs["Config"]["Image"] == spec.agent
        assert attrs["Config"]["Labels"]["rl-arena.warm"] == "1"
        assert attrs["HostConfig"]["ReadonlyRootfs"] and attrs["HostConfig"]["NetworkMode"] == "none"


def test_a_warm_container_is_retired_after_its_duel_budget_and_when_a_duel_leaves_ipc_objects(
    warm_sandbox, build_dir
) -> None:
    sandbox = warm_sandbox(max_duels=2)
    image = build_dir(WARM_PROBE)
    spec = LaunchSpec(agent=image)

    duels = [_probes(_play(sandbox, spec)) for _ in range(3)]
    used = [{_container_of(report) for report in reports} for reports in duels]
    assert used[0] == used[1]  # reused once
    assert used[2].isdisjoint(used[1])  # then retired after two duels each
    assert sandbox.pool.created == 4

    leaky = _probes(_play(sandbox, LaunchSpec(agent=image, env={"PROBE_SYSV": "1"})))
    assert {_container_of(report) for report in leaky} == used[2]
    # System V segments outlive their processes: the factory reports it and both containers are retired.
    assert sandbox.pool.idle() == []
    after = _probes(_play(sandbox, spec))
    assert {_container_of(report) for report in after}.isdisjoint(used[2])
    assert all(report["sysv"] == [] for report in after)


def test_reuse_is_an_operator_setting_and_off_in_the_library(settings, monkeypatch) -> None:
    from duel_runner.tasks import duel_sandbox
    from run_duel.sandbox.docker import DockerSandbox

    # A checkout's .env (copied from example.env, loaded into the environment by the settings) says "on":
    # the library's own default stays cold; only the platform's settings turn reuse on.
    monkeypatch.setenv("DUEL_SANDBOX_REUSE", "on")
    library = DockerSandbox()
    assert library.reuse.enabled is False and library.pool is None
    library.close()
    settings.SANDBOX = "docker"
    settings.DUEL_SANDBOX_REUSE, settings.DUEL_SANDBOX_REUSE_DUELS = True, 5
    settings.DUEL_SANDBOX_REUSE_SECONDS, settings.DUEL_SANDBOX_REUSE_IDLE = 60, 3
    platform = duel_sandbox()
    assert (platform.reuse.enabled, platform.reuse.max_duels, platform.reuse.max_age_s) == (True, 5, 60.0)
    platform.close()
    settings.DUEL_SANDBOX_REUSE = False
    off = duel_sandbox()
    assert off.reuse.enabled is False
    off.close()


def test_two_revisions_with_the_same_image_never_share_a_warm_container(
    warm_sandbox, random_image: str
) -> None:
    sandbox = warm_sandbox()

    def seat(revision: str) -> str:
        proc = sandbox.launch(LaunchSpec(agent=random_image, limits=LIMITS, labels={"revision": revision}))
        assert proc.channel.recv(10, 4096) == {"type": "ready"}
        proc.channel.send({"type": "close"}, 1)
        proc.kill()
        return proc.container_id

    first_a, first_b, again_a = seat("1"), seat("2"), seat("1")
    assert first_a != first_b
    assert again_a == first_a


def test_a_warm_container_that_died_while_idle_is_replaced(warm_sandbox, build_dir) -> None:
    sandbox = warm_sandbox()
    spec = LaunchSpec(agent=build_dir(WARM_PROBE))
    before = {_container_of(report) for report in _probes(_play(sandbox, spec))}
    get_client().api.kill(sorted(before)[0])  # e.g. an operator, or the engine: the factory is gone

    after = {_container_of(report) for report in _probes(_play(sandbox, spec))}

    assert sorted(before)[0] not in after  # retired, replaced by a new container
    assert sorted(before)[1] in after  # the healthy one served again
    assert sandbox.pool.created == 3
