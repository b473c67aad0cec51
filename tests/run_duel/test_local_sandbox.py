"""The local sandbox: launching, limits, isolation and cleanup, with real subprocesses."""

from __future__ import annotations

import os
import textwrap
import time

import pytest
from run_duel_helpers import (
    HAS_BWRAP,
    HAS_PIDS_CGROUP,
    RANDOM,
    REPO,
    assert_nothing_left,
    player_source,
    processes_with_marker,
)

from run_duel.sandbox.base import LaunchSpec, Limits, SandboxError
from run_duel.sandbox.local import LocalSandbox

START = {"type": "start", "state": [[0]], "valid_actions": [0, 1]}


def ask(proc, message=START, timeout=10.0):
    proc.channel.send(message, timeout)
    return proc.channel.recv(timeout, 65536)


def test_a_launched_agent_says_ready_and_answers(any_sandbox, marker):
    proc = any_sandbox.launch(LaunchSpec(str(RANDOM), env={"MARKER": marker}))
    assert proc.channel.recv(30, 65536) == {"type": "ready"}
    assert ask(proc)["action"] in (0, 1)
    proc.kill()
    assert_nothing_left(any_sandbox, marker)


def test_kill_is_idempotent_and_reaps_the_process(any_sandbox):
    proc = any_sandbox.launch(LaunchSpec(str(RANDOM)))
    proc.kill()
    proc.kill()
    assert proc.poll_exit() is not None
    assert_nothing_left(any_sandbox)


def test_kill_also_ends_children_and_detached_grandchildren(any_sandbox, make_agent, marker):
    if not any_sandbox.bwrap and not HAS_PIDS_CGROUP:
        pytest.skip("without bubblewrap or a pids cgroup, a setsid() grandchild can escape (documented)")
    agent = make_agent(
        player_source("""
            import subprocess
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
            return int(valid_actions[0])
        """)
    )
    proc = any_sandbox.launch(LaunchSpec(str(agent), env={"MARKER": marker}))
    assert proc.channel.recv(30, 65536) == {"type": "ready"}
    assert ask(proc)["type"] == "action"
    deadline = time.monotonic() + 20
    while len(processes_with_marker(marker)) < 3:  # harness + two sleepers (+ bubblewrap)
        assert time.monotonic() < deadline, "the children never started"
        time.sleep(0.05)
    proc.kill()
    assert_nothing_left(any_sandbox, marker)


def test_the_agent_environment_is_built_from_scratch(any_sandbox, make_agent, monkeypatch):
    monkeypatch.setenv("ARENA_TEST_SECRET", "hunter2")
    agent = make_agent(
        player_source("""
            print(sorted(os.environ.items()), file=sys.stderr)
            return int(valid_actions[0])
        """)
    )
    proc = any_sandbox.launch(LaunchSpec(str(agent), env={"EXTRA": "given"}))
    assert proc.channel.recv(30, 65536) == {"type": "ready"}
    ask(proc)
    proc.kill()
    log = proc.stderr_log()
    assert "hunter2" not in log and "ARENA_TEST_SECRET" not in log
    assert "('EXTRA', 'given')" in log and "('PYTHONDONTWRITEBYTECODE', '1')" in log


def test_the_stderr_log_keeps_only_a_capped_tail(sandbox, make_agent):
    agent = make_agent(
        player_source("""
            for i in range(2000):
                print(f"line {i:05d}", file=sys.stderr)
            return int(valid_actions[0])
        """)
    )
    proc = sandbox.launch(LaunchSpec(str(agent), limits=Limits(log_bytes=1000)))
    proc.channel.recv(30, 65536)
    ask(proc)
    proc.wait_exit(0.3)  # let the reader thread drain
    proc.kill()
    log = proc.stderr_log()
    assert "line 01999" in log and "line 00000" not in log
    assert len(log) < 1200 and "earlier bytes dropped" in log


def test_the_address_space_limit_turns_big_allocations_into_memory_errors(sandbox, make_agent):
    agent = make_agent(
        player_source("""
            hog = bytearray(2 * 1024 * 1024 * 1024)
            return 0
        """)
    )
    proc = sandbox.launch(LaunchSpec(str(agent), limits=Limits(memory_mb=256)))
    proc.channel.recv(30, 65536)
    reply = ask(proc)
    proc.kill()
    assert reply["type"] == "error" and reply["exception"] == "MemoryError"


def test_the_agent_folder_is_not_modified(any_sandbox, make_agent):
    agent = make_agent(
        player_source("""
            try:
                open("written.txt", "w").write("x")
            except OSError:
                pass
            return int(valid_actions[0])
        """)
    )
    proc = any_sandbox.launch(LaunchSpec(str(agent)))
    proc.channel.recv(30, 65536)
    ask(proc)
    proc.kill()
    assert not (agent / "written.txt").exists()


def test_a_missing_agent_folder_is_a_sandbox_error(sandbox, tmp_path):
    with pytest.raises(SandboxError, match="does not exist"):
        sandbox.launch(LaunchSpec(str(tmp_path / "nowhere")))


def test_requiring_bubblewrap_when_it_is_missing_is_a_sandbox_error(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SandboxError, match="bubblewrap"):
        LocalSandbox(use_bwrap=True)


def test_without_bubblewrap_the_isolation_says_it_is_weak():
    assert "WITHOUT bubblewrap" in LocalSandbox(use_bwrap=False).isolation


@pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap not installed")
class TestBubblewrap:
    """What the agent can and cannot do inside bubblewrap."""

    def probe(self, sandbox, make_agent, code: str) -> str:
        agent = make_agent(player_source(textwrap.dedent(code) + "\nreturn 0"))
        proc = sandbox.launch(LaunchSpec(str(agent)))
        assert proc.channel.recv(30, 65536) == {"type": "ready"}
        reply = ask(proc)
        proc.kill()
        assert reply["type"] == "action", reply
        return proc.stderr_log()

    def test_there_is_no_network(self, make_agent):
        log = self.probe(
            LocalSandbox(use_bwrap=True),
            make_agent,
            """
            import socket
            try:
                socket.create_connection(("127.0.0.1", 5432), timeout=2)
                print("NET OK", file=sys.stderr)
            except OSError as exc:
                print("NET FAIL", exc, file=sys.stderr)
            """,
        )
        assert "NET FAIL" in log

    def test_it_runs_as_an_unprivileged_uid_and_sees_little_of_the_host(self, make_agent):
        log = self.probe(
            LocalSandbox(use_bwrap=True),
            make_agent,
            """
            print("UID", os.getuid(), file=sys.stderr)
            print("ROOT", sorted(os.listdir("/")), file=sys.stderr)
            print("SHADOW", os.path.exists("/etc/shadow"), file=sys.stderr)
            print("HOME", os.listdir(os.environ["HOME"]), file=sys.stderr)
            print("REPO", os.path.exists(REPO_CHECK), file=sys.stderr)
            """.replace("REPO_CHECK", repr(str(REPO / "run_duel"))),
        )
        assert "UID 65534" in log
        assert "SHADOW False" in log
        assert "REPO False" in log  # the referee's source tree (and data/) is not visible
        assert "HOME []" in log

    def test_nested_user_namespaces_and_chroot_are_refused(self, make_agent):
        log = self.probe(
            LocalSandbox(use_bwrap=True),
            make_agent,
            """
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            print("UNSHARE", libc.unshare(0x10000000), file=sys.stderr)  # CLONE_NEWUSER
            print("CHROOT", libc.chroot(b"/tmp"), file=sys.stderr)
            """,
        )
        assert "UNSHARE -1" in log and "CHROOT -1" in log

    def test_the_agent_folder_is_read_only_and_tmp_is_writable(self, make_agent):
        log = self.probe(
            LocalSandbox(use_bwrap=True),
            make_agent,
            """
            try:
                open("/agent/x", "w")
            except OSError as exc:
                print("AGENT RO", exc.errno, file=sys.stderr)
            open("/tmp/scratch", "w").write("ok")
            print("TMP OK", file=sys.stderr)
            """,
        )
        assert "AGENT RO" in log and "TMP OK" in log


def test_the_environment_of_the_referee_is_unchanged_by_launches(sandbox):
    before = dict(os.environ)
    proc = sandbox.launch(LaunchSpec(str(RANDOM)))
    proc.kill()
    assert dict(os.environ) == before


def test_the_cpu_time_limit_ends_a_spinning_agent(sandbox, make_agent):
    agent = make_agent(
        player_source("""
            while True:
                pass
        """)
    )
    proc = sandbox.launch(LaunchSpec(str(agent), limits=Limits(cpu_time_s=1)))
    proc.channel.recv(30, 65536)
    proc.channel.send(START, 5)
    info = proc.wait_exit(30)
    proc.kill()
    assert info is not None and "CPU time limit" in info.detail


@pytest.mark.skipif(not HAS_PIDS_CGROUP, reason="no writable pids cgroup controller")
def test_forks_are_capped_by_the_pids_cgroup(any_sandbox, make_agent, marker):
    agent = make_agent(
        player_source("""
            import time
            made = 0
            for _ in range(200):
                try:
                    if os.fork() == 0:
                        time.sleep(300)
                        os._exit(0)
                    made += 1
                except OSError:
                    break
            print("FORKED", made, file=sys.stderr)
            return 0
        """)
    )
    proc = any_sandbox.launch(LaunchSpec(str(agent), limits=Limits(pids=16), env={"MARKER": marker}))
    proc.channel.recv(30, 65536)
    assert ask(proc, timeout=30)["type"] == "action"
    proc.kill()
    forked = int(proc.stderr_log().split("FORKED", 1)[1].split()[0])
    assert forked < 16
    assert_nothing_left(any_sandbox, marker)


@pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap not installed")
@pytest.mark.parametrize("folder", ["/tmp", "/dev/shm"])
def test_writable_folders_inside_bubblewrap_are_size_capped(make_agent, folder):
    agent = make_agent(
        player_source(f"""
            written = 0
            try:
                for i in range(64):
                    with open("{folder}/fill%d" % i, "wb") as f:
                        f.write(b"x" * (1 << 20))
                    written += 1
            except OSError as exc:
                print("FULL", exc.errno, file=sys.stderr)
            print("WRITTEN", written, file=sys.stderr)
            return 0
        """)
    )
    proc = LocalSandbox(use_bwrap=True).launch(LaunchSpec(str(agent), limits=Limits(tmpfs_mb=8)))
    proc.channel.recv(30, 65536)
    assert ask(proc)["type"] == "action"
    proc.kill()
    log = proc.stderr_log()
    assert "FULL" in log
    assert int(log.split("WRITTEN", 1)[1].split()[0]) < 20


@pytest.mark.skipif(not HAS_PIDS_CGROUP, reason="no writable pids cgroup controller")
def test_stale_empty_cgroups_are_removed_and_busy_ones_kept():
    import subprocess
    import sys

    from run_duel.sandbox.local_cgroup import PIDS_CGROUP_ROOT, SeatCgroup

    empty = PIDS_CGROUP_ROOT / "arena-staletest-empty"
    busy = PIDS_CGROUP_ROOT / "arena-staletest-busy"
    empty.mkdir()
    busy.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (busy / "cgroup.procs").write_text(str(sleeper.pid))
        SeatCgroup.remove_stale(min_age_s=None, prefix="arena-staletest-")
        assert not empty.exists()
        assert busy.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
        for path in (empty, busy):
            deadline = time.monotonic() + 5
            while path.exists() and time.monotonic() < deadline:
                try:
                    path.rmdir()
                except OSError:
                    time.sleep(0.05)


@pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is not installed")
def test_an_interpreter_under_the_hosts_tmp_still_runs_inside_bubblewrap(tmp_path):
    """A checkout (and its venv) under /tmp, as in a CI clone, is not hidden by the sandbox's private /tmp."""
    import site
    import subprocess
    import sys

    assert str(tmp_path).startswith("/tmp/")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (next(venv.glob("lib/python3*/site-packages")) / "host.pth").write_text(
        "\n".join(site.getsitepackages()) + "\n"  # numpy and friends from the running environment
    )
    proc = LocalSandbox(python=str(venv / "bin" / "python"), use_bwrap=True).launch(LaunchSpec(str(RANDOM)))
    try:
        assert proc.channel.recv(30, 65536) == {"type": "ready"}, proc.stderr_log()
        assert ask(proc)["action"] in (0, 1)
    finally:
        proc.kill()
