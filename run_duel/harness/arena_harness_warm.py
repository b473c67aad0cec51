"""``--warm``: the harness as the factory of a warm container (PID 1), forking one fresh agent process per
duel and cleaning the container after it."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import random
import select
import signal
import socket
import sys
import time
import traceback

try:  # part of run_duel (the in-process sandbox, tests)
    from . import arena_harness_player
except ImportError:  # run as a script: ``arena_harness.py`` loaded it already (by path)
    import arena_harness_player  # type: ignore[no-redef]
try:  # part of run_duel (the in-process sandbox, tests)
    from . import arena_harness_protocol
except ImportError:  # run as a script: ``arena_harness.py`` loaded it already (by path)
    import arena_harness_protocol  # type: ignore[no-redef]

PACKAGES_DIR = arena_harness_player.PACKAGES_DIR
ProtocolError = arena_harness_protocol.ProtocolError
Transport = arena_harness_protocol.Transport

#
# ``--warm``: this process is PID 1 of a container that serves one revision for many duels, one at a time. It
# imports numpy once (unless the agent's packages bring their own) and then, per duel, forks a fresh agent
# process (which, after the referee's go byte, adds the agent's packages and imports player.py like a cold
# harness does) and afterwards kills every other process of the container and empties every folder an agent
# can write. Nothing of the agent's ever runs in the factory: it started as ``python3 -I`` (no PYTHONPATH, no
# site hooks of the agent's packages). Being PID 1 protects it: the kernel delivers no signal from inside the
# container to a namespace's init unless it handles that signal (it handles only SIGCHLD, a no-op), and
# ``kill(-1)`` skips it. It is not dumpable, so an agent of the same uid cannot ptrace it or read its memory.
# The referee talks to it over a SOCK_SEQPACKET control socket (one JSON object per packet; the duel's channel
# and stderr pipe arrive as descriptors with ``spawn``).

#: Folders an agent can write to in its container; each is emptied after every duel (``/arena-data``, the
#: agent's persistent data folder, is read back by the referee first and filled again for the next duel).
WRITABLE_DIRS = ("/tmp", "/dev/shm", "/dev/mqueue", "/arena-data")  # noqa: S108 - the container's own
#: System V IPC objects outlive their creator; any left after a duel makes the container unclean.
SYSV_IPC_FILES = ("/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem")
#: How long the end-of-duel clean-up may take before the container is declared unclean.
REAP_PATIENCE_S = 2.0
_PR_GET_DUMPABLE = 3
_PR_SET_DUMPABLE = 4


def _prctl(option: int, value: int = 0) -> int:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(option, value, 0, 0, 0))


def _oom_kills() -> int:
    """How many processes the kernel OOM-killed in this container's memory cgroup so far (-1: unknown)."""
    for path in ("/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events"):
        try:
            with open(path) as handle:
                for line in handle:
                    name, _, value = line.partition(" ")
                    if name == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            continue
    return -1


def _other_pids() -> list[int]:
    """Every process of the container but this one (PID 1)."""
    return [int(name) for name in os.listdir("/proc") if name.isdigit() and int(name) != os.getpid()]


def _wipe(path: str) -> None:
    """Delete ``path`` whatever its modes (every file in the container belongs to the agent's uid);
    failures are found by the caller, which checks that the folder is empty."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, 0o700)
            for name in os.listdir(path):
                _wipe(os.path.join(path, name))
            os.rmdir(path)
        else:
            os.unlink(path)
    except (OSError, RecursionError):
        pass


class WarmFactory:
    """PID 1 of a warm container: forks one agent process per duel and cleans up after it."""

    def __init__(self, agent_dir: str, control: socket.socket, packages: str = PACKAGES_DIR) -> None:
        self.agent_dir = agent_dir
        self.packages = packages
        self.control = control
        self.child = 0  # the current duel's agent process (0: none)
        self.status: int | None = None  # its exit code, negative for a signal
        self.oom_before = 0
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)

    def _drain_wakeups(self) -> None:
        try:
            while os.read(self.wake_r, 4096):
                pass
        except BlockingIOError:
            pass

    def reap(self) -> None:
        """Collect every exited child (orphans come to PID 1); remember the agent's exit code."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.child and self.status is None:
                self.status = os.waitstatus_to_exitcode(status)

    def serve(self) -> int:
        """Answer the referee until it closes the control socket (then the container ends)."""
        while True:
            readable, _, _ = select.select([self.control, self.wake_r], [], [])
            if self.wake_r in readable:
                self._drain_wakeups()
                self.reap()
            if self.control not in readable:
                continue
            data, fds, _, _ = socket.recv_fds(self.control, 65536, 2)
            if not data:
                return 0
            try:
                reply = self.handle(json.loads(data), fds)
            except Exception as exc:
                for fd in fds:
                    os.close(fd)
                reply = {"type": "failed", "message": f"{type(exc).__name__}: {exc}"}
            self.control.sendall(arena_harness_protocol.dumps(reply).encode())

    def handle(self, msg: dict, fds: list[int]) -> dict:
        kind = msg.get("type")
        if kind == "spawn":
            return self.spawn(msg, fds)
        if kind == "poll":
            self.reap()
            return self.exit_reply()
        if kind == "wait":
            deadline = time.monotonic() + float(msg.get("timeout", 0))
            while True:
                self.reap()
                left = deadline - time.monotonic()
                if self.status is not None or left <= 0:
                    return self.exit_reply()
                select.select([self.wake_r], [], [], left)
                self._drain_wakeups()
        if kind == "pin":
            return {"type": "pinned", "ok": self.pin(set(msg["cpus"]))}
        if kind == "reap":
            problem = self.clean()
            reply = {**self.exit_reply(), "type": "reaped", "clean": not problem, "problem": problem}
            self.child, self.status = 0, None
            return reply
        raise ProtocolError(f"unknown request {kind!r}")

    def exit_reply(self) -> dict:
        oom = _oom_kills()
        return {"type": "exit", "status": self.status, "oom": oom > self.oom_before >= 0}

    def spawn(self, msg: dict, fds: list[int]) -> dict:
        if self.child or len(fds) != 2:
            raise ProtocolError("spawn needs two descriptors and no agent running")
        self.status = None
        self.oom_before = _oom_kills()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = self.agent_process(msg, fds)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:
                traceback.print_exc()
            finally:
                try:
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        for fd in fds:
            os.close(fd)
        self.child = pid
        return {"type": "spawned", "pid": pid}

    def agent_process(self, msg: dict, fds: list[int]) -> int:
        """In the forked child: become a fresh agent process for one duel, then serve it."""
        channel_fd, stderr_fd = fds
        signal.set_wakeup_fd(-1)
        os.close(self.wake_r)
        os.close(self.wake_w)
        self.control.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.setsid()
        _prctl(_PR_SET_DUMPABLE, 1)  # as a cold agent process is (its own /proc files, core limits apply)
        try:
            with open("/proc/self/oom_score_adj", "w") as handle:
                handle.write("1000")  # the agent, never the factory, is the OOM killer's choice
        except OSError:
            pass
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(stderr_fd, 1)
        os.dup2(stderr_fd, 2)
        os.close(stderr_fd)
        sys.stdout = sys.stderr
        os.environ.update({str(k): str(v) for k, v in (msg.get("env") or {}).items()})
        random.seed()  # fresh entropy per duel (numpy's global generator is not reseeded by fork)
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.random.seed()
        sock = socket.socket(fileno=channel_fd)
        if sock.recv(1) != b"\n":  # the referee placed this process and filled its data folder: go
            return 1
        transport = Transport(sock.fileno(), sock.fileno(), sock)
        return arena_harness_player.run_agent(transport, self.agent_dir, self.packages)

    def pin(self, cpus: set[int]) -> bool:
        """Set the affinity of every thread of every agent process (placement, as a cpuset would)."""
        ok = True
        for pid in _other_pids():
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                try:
                    os.sched_setaffinity(int(tid), cpus)
                except ProcessLookupError:
                    pass
                except OSError:
                    ok = False
        return ok

    def clean(self) -> str:
        """Kill every other process of the container, empty the writable folders, check System V IPC.
        Returns "" when the container is as it was before the duel, else what is left."""
        deadline = time.monotonic() + REAP_PATIENCE_S
        while True:
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)  # every process we may signal but ourselves (PID 1)
            self.reap()
            left = _other_pids()
            if not left:
                break
            if time.monotonic() > deadline:
                return f"processes survived the duel: {left[:10]}"
            time.sleep(0.002)
        problems = []
        for folder in WRITABLE_DIRS:
            if not os.path.isdir(folder):
                continue
            if os.stat(folder).st_uid == os.getuid():
                os.chmod(folder, 0o700)  # the agent owns the data folder and may have locked it
            try:
                for name in os.listdir(folder):
                    _wipe(os.path.join(folder, name))
                if os.listdir(folder):
                    problems.append(f"{folder} could not be emptied")
            except OSError as exc:
                problems.append(f"{folder} could not be emptied: {exc}")
        for path in SYSV_IPC_FILES:
            try:
                with open(path) as handle:
                    if len(handle.read().splitlines()) > 1:
                        problems.append(f"System V IPC objects left ({path})")
            except OSError:
                pass
        return "; ".join(problems)


def _connect_control(path: str) -> socket.socket:
    deadline = time.monotonic() + arena_harness_protocol.CONNECT_RETRY_S
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            sock.connect(path)
            return sock
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def warm_main(agent_dir: str, control_path: str, packages: str = PACKAGES_DIR) -> int:
    """Serve as a warm container's PID 1 (refuses anywhere else: ``kill(-1)`` would reach too far).

    The factory never imports anything of the agent's: its packages join the path only in each forked
    agent process. numpy is imported here, once for every duel, only when those packages do not bring a
    numpy of their own (which the agent's process then imports itself)."""
    if os.getpid() != 1:
        print("arena_harness: --warm runs only as a container's first process", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _prctl(_PR_SET_DUMPABLE, 0)
    if _prctl(_PR_GET_DUMPABLE) != 0:
        print("arena_harness: could not make the factory undumpable", file=sys.stderr)
        return 2
    control = _connect_control(control_path)
    if not arena_harness_player.ships_numpy(packages):
        importlib.import_module("numpy")
    import gc

    gc.collect()
    gc.freeze()  # keep the factory's objects out of the children's collections (fewer copied pages)
    control.sendall(b'{"type":"warm"}')
    return WarmFactory(agent_dir, control, packages).serve()
