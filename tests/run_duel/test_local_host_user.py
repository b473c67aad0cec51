"""Issue 27, item 4: bubblewrap started by root mapped the agent's uid 65534 to host uid 0, so an agent read
every root-only file bound into its sandbox (``/etc/shadow`` was shown). A root referee now runs every agent
as the unprivileged ``rl-arena-agent`` user (``run_duel.sandbox.local.AGENT_USER``), or refuses to start.

These tests are about a referee running as root (as ``./prepare_dev.sh`` and CI run it on a fresh machine);
as another user the sandbox already maps the agent to that user, which the first test checks too."""

from __future__ import annotations

import json
import os
import pwd
import textwrap
from pathlib import Path

import pytest
from run_duel_helpers import HAS_BWRAP, player_source

from run_duel.agent_data import AgentData, archive_of
from run_duel.sandbox import local, local_user
from run_duel.sandbox.base import LaunchSpec, Limits, SandboxError
from run_duel.sandbox.local import LocalSandbox

pytestmark = pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is not installed")

IS_ROOT = os.geteuid() == 0
SECRET = "root-only secret 8c41"

#: Reads what a root-only file would give away, says who it is, and proves it can still use its data
#: folder, its /tmp and its HOME.
PROBE = player_source("""
    import os, json
    out = {}
    for name in ("/agent/secret.txt", "/etc/shadow"):
        try:
            with open(name) as f:
                out[name] = f.read()
        except OSError as exc:
            out[name] = type(exc).__name__
    status = dict(l.split(":", 1) for l in open("/proc/self/status"))
    out["NoNewPrivs"] = status["NoNewPrivs"].strip()
    out["CapEff"] = status["CapEff"].strip()
    out["uid"] = os.getuid()
    out["max_user_namespaces"] = open("/proc/sys/user/max_user_namespaces").read().strip()
    data = os.environ["ARENA_DATA_DIR"]
    out["seed"] = open(os.path.join(data, "seed.txt")).read()
    with open(os.path.join(data, "seed.txt"), "w") as f:
        f.write("rewritten")
    for folder in ("/tmp", os.environ["HOME"], "/dev/shm"):
        with open(os.path.join(folder, "scratch"), "w") as f:
            f.write("x")
    print("PROBE " + json.dumps(out), file=sys.stderr, flush=True)
    return int(valid_actions[0])
""")


def _host_status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as handle:
        return dict(line.rstrip("\n").split(":\t", 1) for line in handle if ":\t" in line)


@pytest.fixture
def bound_shadow(monkeypatch):
    """Bind the host's /etc/shadow into the sandbox, as the attack of issue 27 did."""
    if not os.path.exists("/etc/shadow"):
        pytest.skip("no /etc/shadow on this machine")
    monkeypatch.setattr(local, "_ETC_FILES", (*local._ETC_FILES, "shadow"))


def test_an_agent_never_runs_as_host_root_nor_reads_root_only_files(make_agent, bound_shadow):
    agent = make_agent(PROBE)
    secret = agent / "secret.txt"
    secret.write_text(SECRET)
    os.chmod(secret, 0o600)  # owned by us (root in CI): only we may read it
    sandbox = LocalSandbox(use_bwrap=True)
    spec = LaunchSpec(
        str(agent), limits=Limits(data_mb=4), data=AgentData(archive=archive_of({"seed.txt": b"seeded"}))
    )
    proc = sandbox.launch(spec)
    try:
        assert proc.channel.recv(60, 65536) == {"type": "ready"}, proc.stderr_log()
        harness = proc.harness_pid()
        assert harness, proc.stderr_log()
        host = _host_status(harness)  # from the referee's side: the agent's uids as the host sees them
        host_uids = {int(uid) for uid in host["Uid"].split()}
        proc.channel.send({"type": "start", "state": [[0] * 3] * 3, "valid_actions": [0, 1]}, 10)
        assert proc.channel.recv(30, 65536)["type"] == "action", proc.stderr_log()
        data_root = proc.data_root()
        assert data_root is not None
        with open(os.path.join(data_root, "seed.txt")) as handle:
            rewritten = handle.read()
    finally:
        proc.kill()
    line = next(x for x in proc.stderr_log().splitlines() if x.startswith("PROBE "))
    found = json.loads(line.split(" ", 1)[1])
    assert 0 not in host_uids, host
    if IS_ROOT:
        assert host_uids == {pwd.getpwnam(local.AGENT_USER).pw_uid}, host
    else:
        assert host_uids == {os.getuid()}, host
    assert found["uid"] == local.SANDBOX_UID
    assert found["/agent/secret.txt"] == "PermissionError", found
    assert found["/etc/shadow"] == "PermissionError", found
    assert found["NoNewPrivs"] == "1" and int(found["CapEff"], 16) == 0, found
    assert found["max_user_namespaces"] == "0", found  # no user namespace of its own inside
    assert found["seed"] == "seeded" and rewritten == "rewritten"


@pytest.mark.skipif(not IS_ROOT, reason="only a root referee needs the agent user")
def test_a_root_referee_without_the_agent_user_refuses_to_start_bubblewrap(monkeypatch):
    monkeypatch.setattr(local_user, "AGENT_USER", "rl-arena-no-such-user")
    with pytest.raises(SandboxError, match=r"rl-arena-no-such-user.*ensure_agent_user\.sh"):
        LocalSandbox(use_bwrap=True)


@pytest.mark.skipif(not IS_ROOT, reason="only a root referee needs the agent user")
def test_a_privileged_agent_user_is_refused(monkeypatch):
    monkeypatch.setattr(local_user, "AGENT_USER", "root")
    with pytest.raises(SandboxError, match="must be an unprivileged user"):
        LocalSandbox(use_bwrap=True)


@pytest.mark.skipif(
    not IS_ROOT, reason="a root referee's own 0700 folders are what the agent user cannot open"
)
def test_an_agent_folder_the_agent_user_cannot_open_runs_from_a_readable_copy(tmp_path):
    private = tmp_path / "private"  # pytest's own folders are 0700, as a root user's home is
    agent = private / "bot"
    agent.mkdir(parents=True)
    os.chmod(private, 0o700)
    os.chmod(agent, 0o700)
    (agent / "player.py").write_text(textwrap.dedent(PROBE))
    secret = agent / "secret.txt"
    secret.write_text(SECRET)
    os.chmod(secret, 0o600)  # the copy keeps each file's mode: still unreadable to the agent
    sandbox = LocalSandbox(use_bwrap=True)
    spec = LaunchSpec(
        str(agent), limits=Limits(data_mb=4), data=AgentData(archive=archive_of({"seed.txt": b"seeded"}))
    )
    proc = sandbox.launch(spec)
    try:
        assert proc.channel.recv(60, 65536) == {"type": "ready"}, proc.stderr_log()
        proc.channel.send({"type": "start", "state": [[0] * 3] * 3, "valid_actions": [0, 1]}, 10)
        assert proc.channel.recv(30, 65536)["type"] == "action", proc.stderr_log()
    finally:
        proc.kill()
    found = json.loads(
        next(x for x in proc.stderr_log().splitlines() if x.startswith("PROBE ")).split(" ", 1)[1]
    )
    assert found["/agent/secret.txt"] == "PermissionError", found
    staged = Path(proc.workdir or "")
    assert staged.name.startswith("arena-agent-") and not staged.exists()  # the copy goes with the agent
