"""The local sandbox: the agent runs as a subprocess of the referee, under resource limits.

Isolation, strongest first:

* **bubblewrap** (when ``bwrap`` is installed, the default then): new user, PID, network, IPC, UTS and
  mount namespaces (``--unshare-all``: no network at all), as uid/gid 65534 (an unprivileged host user: ours,
  or ``AGENT_USER`` when we are root, never host root: see ``_agent_userns``), a fresh root holding
  only read-only binds of ``/usr``, the library folders, a few files of ``/etc`` and the Python
  installation; the agent folder read-only at ``/agent``; a size-capped tmpfs at ``/tmp``; minimal
  ``/proc`` and ``/dev``; a seccomp filter refusing the system calls Docker's default profile refuses
  (``sandbox/seccomp.py``: keyrings, bpf, perf events, io_uring, mounts, namespaces, ...). The process
  dies with the referee (``--die-with-parent``).
* **plain subprocess** (no ``bwrap``): the agent folder is *copied* into a fresh temporary folder that
  becomes its cwd and HOME. It can read anything the referee's user can read and use the network. This
  is much weaker than Docker and is only meant for trusted code (your own agents, tests): when ``bwrap``
  is missing the sandbox refuses to start unless ``SANDBOX_ALLOW_UNISOLATED=1`` (or the caller chose it
  with ``use_bwrap=False``), and it logs a warning every time it is created.

Both get rlimits (address space, CPU seconds, file size, open files, no core dumps, processes), a new
session (process group) that ``kill`` SIGKILLs as a whole, an environment built from scratch (nothing of
the referee's environment leaks in), and, when the cgroup v1 ``pids`` controller is writable (we run as
root, where ``RLIMIT_NPROC`` does not bind), a pids cgroup that caps forks and lets ``kill`` find every
descendant. ``Limits.cpus`` is not enforced locally. Each agent's cgroups (``_SeatCgroup``) also carry
its memory limit (the kernel's OOM accounting, as in Docker) and its freezer (``freeze``/``thaw``).

The agent is killed when the referee dies (``--die-with-parent`` / ``PR_SET_PDEATHSIG``); Linux ties that
to the *thread* that launched it, so launch agents from the thread that plays the duel (``play_duel``
does).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import logging
import os
import pwd
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from run_duel.agent_data import DATA_DIR_ENV, DATA_DIR_IN_SANDBOX, MB, DataError, check_archive, fill_folder
from run_duel.channel import Channel
from run_duel.sandbox import cgroups, seccomp
from run_duel.sandbox.base import (
    HARNESS_PYTHON_FLAGS,
    AgentDataRefused,
    AgentProcess,
    ExitInfo,
    LaunchSpec,
    Limits,
    Sandbox,
    SandboxError,
)

log = logging.getLogger(__name__)

HARNESS_PATH = Path(__file__).resolve().parent.parent / "harness" / "arena_harness.py"
#: How long bubblewrap may take to set up the sandbox before the data folder is filled.
DATA_SETUP_TIMEOUT_S = 10.0
#: Address space allowed on top of ``Limits.memory_mb``: RLIMIT_AS counts mapped (not resident) memory,
#: so Python + numpy need room beyond what Docker's RSS-based limit would count.
ADDRESS_SPACE_SLACK_MB = 256
#: A SIGKILL we did not send, with peak RSS at or above this fraction of the limit, is read as MEMORY_LIMIT.
OOM_RSS_FRACTION = 0.9
#: Empty per-agent cgroups older than this are leftovers of a referee that was killed: removed.
STALE_CGROUP_AGE_S = 600
#: Size of the private /dev/shm inside bubblewrap (multiprocessing and some BLAS builds use it).
SHM_MB = 16
#: How long to wait for the last stderr bytes of an ended process (a surviving child may hold the pipe).
STDERR_DRAIN_S = 0.2
_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group", "nsswitch.conf")
PIDS_CGROUP_ROOT = Path("/sys/fs/cgroup/pids")
CGROUP_PREFIX = "arena-"
_PR_SET_PDEATHSIG = 1
#: The private tmpfs inside bubblewrap (not the host's /tmp).
SANDBOX_TMP = "/tmp"  # noqa: S108
#: The agent's HOME inside bubblewrap: an empty folder of the private tmpfs (``/tmp`` itself may hold the
#: mount points of an interpreter that lives under the host's /tmp).
SANDBOX_HOME = f"{SANDBOX_TMP}/home"

#: The setting that allows running agents without bubblewrap (as plain subprocesses) when ``bwrap`` is
#: missing: without it the local sandbox refuses to start rather than fall back silently.
ALLOW_UNISOLATED_ENV = "SANDBOX_ALLOW_UNISOLATED"
_TRUE = {"1", "on", "true", "yes"}


#: The host user every agent runs as when the referee is root. Bubblewrap started by root maps the
#: sandbox's uid to host uid 0, so an agent could read every root-only file of the folders bound into its
#: sandbox; instead, a root referee gives bubblewrap a user namespace it made itself (``_agent_userns``),
#: where the sandbox's uid 65534 is this user, and the agent drops to it (``setpriv``) before the harness
#: starts. ``scripts/ensure_agent_user.sh`` creates it (``./prepare_dev.sh`` and ``run_tests.sh`` run it);
#: without it a root referee refuses to start bubblewrap. A referee that is not root needs none: bubblewrap
#: maps the sandbox's uid to the referee's own, already unprivileged.
AGENT_USER = "rl-arena-agent"
#: The agent's uid and gid inside the sandbox (bubblewrap's and Docker's ``nobody``).
SANDBOX_UID = 65534
_CLONE_NEWUSER = 0x10000000


def agent_host_user() -> tuple[int, int] | None:
    """``(uid, gid)`` agents must run as: ``AGENT_USER``'s when we are root, else ``None`` (our own).

    Raises ``SandboxError`` when we are root and that user is missing or privileged."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(AGENT_USER)
    except KeyError:
        raise SandboxError(
            f"the worker runs as root, and bubblewrap started by root would run agents as host root (able to "
            f"read every root-only file of the folders bound into the sandbox): create the unprivileged user "
            f"{AGENT_USER!r} that agents run as instead (scripts/ensure_agent_user.sh; ./prepare_dev.sh runs "
            f"it), or run the worker as an unprivileged user"
        ) from None
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise SandboxError(
            f"the user {AGENT_USER!r} that agents run as has uid {entry.pw_uid} / gid {entry.pw_gid}: it "
            "must be an unprivileged user (scripts/ensure_agent_user.sh creates one)"
        )
    return entry.pw_uid, entry.pw_gid


_libc = ctypes.CDLL(None, use_errno=True)


def _stage_readable(agent_dir: Path) -> tuple[str, Path]:
    """A copy of ``agent_dir`` whose top folder the agent's unprivileged user may open (a folder made by
    a root process, e.g. under a 0700 temporary or home folder). Builds extract agents world-readable
    (``builder/extract.py``), so only folders given by hand need it. Files keep their own modes: what the
    owner made unreadable stays unreadable to the agent. Returns (the staging folder, the copy)."""
    staging = tempfile.mkdtemp(prefix="arena-agent-")
    os.chmod(staging, 0o711)  # noqa: S103 - the agent's user may pass through, not list
    copy = Path(staging) / "agent"
    shutil.copytree(agent_dir, copy, symlinks=True)
    os.chmod(copy, (agent_dir.stat().st_mode & 0o777) | 0o755)  # noqa: S103 - its own code, read-only
    return staging, copy


def _agent_userns(uid: int, gid: int) -> int:
    """A new user namespace for one sandbox (a descriptor on it), made by us as root: host root stays
    root in it (so bubblewrap can bind what root can read: a ``/root/.pyenv`` interpreter, a 0700
    temporary folder), ``SANDBOX_UID`` is ``uid``/``gid``, nothing else is mapped, and it may hold no
    further user namespace (``user.max_user_namespaces`` 0 in it: what ``--disable-userns`` does)."""
    holder = subprocess.Popen(
        ["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, preexec_fn=_unshare_user, cwd="/"
    )
    try:
        for name, line in (
            ("uid_map", f"0 0 1\n{SANDBOX_UID} {uid} 1\n"),
            ("gid_map", f"0 0 1\n{SANDBOX_UID} {gid} 1\n"),
        ):
            with open(f"/proc/{holder.pid}/{name}", "w") as handle:
                handle.write(line)
        fd = os.open(f"/proc/{holder.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        holder.stdin.close()  # type: ignore[union-attr]
        holder.wait()
    limit = subprocess.run(
        ["/bin/sh", "-c", "echo 0 > /proc/sys/user/max_user_namespaces"],
        preexec_fn=functools.partial(_enter_userns, fd),
        pass_fds=(fd,),
        capture_output=True,
        cwd="/",
        check=False,
    )
    if limit.returncode != 0:
        os.close(fd)
        raise OSError(f"could not forbid nested user namespaces: {limit.stderr.decode(errors='replace')}")
    return fd


@contextlib.contextmanager
def _file_identity(owner: tuple[int, int] | None):
    """Make this thread create files as ``owner`` (its file-system uid and gid; ``None``: unchanged).
    ``setfsuid`` is per thread: the referee's other threads keep root's rights."""
    if owner is None:
        yield
        return
    old_gid = _libc.setfsgid(owner[1])
    old_uid = _libc.setfsuid(owner[0])
    try:
        yield
    finally:
        _libc.setfsuid(old_uid)
        _libc.setfsgid(old_gid)


def _unshare_user() -> None:  # in the child between fork and exec (single-threaded)
    if _libc.unshare(_CLONE_NEWUSER) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUSER)")


def _enter_userns(fd: int) -> None:  # in the child between fork and exec (single-threaded)
    if _libc.setns(fd, _CLONE_NEWUSER) != 0:
        raise OSError(ctypes.get_errno(), "setns(CLONE_NEWUSER)")


def unisolated_allowed() -> bool:
    """Whether ``$SANDBOX_ALLOW_UNISOLATED`` allows plain subprocesses (default: no)."""
    return os.environ.get(ALLOW_UNISOLATED_ENV, "").strip().lower() in _TRUE


def bwrap_path() -> str | None:
    """Path of the ``bwrap`` executable, or ``None`` when bubblewrap is not installed."""
    return shutil.which("bwrap")


@functools.cache
def _bwrap_supports(bwrap: str, option: str) -> bool:
    """Whether this bubblewrap build knows ``option`` (``--disable-userns`` needs 0.8)."""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return option in done.stdout + done.stderr


def _libc_prctl() -> object | None:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_prctl = _libc_prctl()


def _count_own_processes() -> int:
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                count += entry.stat().st_uid == uid
    return count


class _SeatCgroup:
    """The cgroups of one agent (best effort: ``create`` returns ``None`` when none is writable).

    Created as children of the referee's own groups (so whatever confines the worker confines its
    agents too), named ``arena-<referee pid>-<random>``: cgroup v1 ``pids`` (caps forks, lists every
    descendant, ``setsid`` included), ``memory`` (the RSS limit, as in Docker, and the kernel's OOM
    accounting) and ``freezer``; on a cgroup v2 host one group whose ``cgroup.freeze`` freezes it (with
    ``pids.max`` / ``memory.max`` when those controllers are delegated to the referee's group).
    """

    def __init__(self, dirs: dict[str, Path], procs_fds: list[int]) -> None:
        self.dirs = dirs
        self.procs_fds = procs_fds
        self.freezer = cgroups.Freezer.for_dirs(dirs)
        self.memory = cgroups.MemoryWatch.for_dirs(dirs)

    @property
    def path(self) -> Path:
        """One of the folders (the pids one when there is one): where ``pids`` reads."""
        return self.dirs.get("pids") or next(iter(self.dirs.values()))

    @staticmethod
    def parents() -> dict[str, Path]:
        """Where seat groups go, per hierarchy: the referee's own group (its root when at the root)."""
        own = cgroups.cgroup_dirs_of(os.getpid())
        roots = cgroups.mounts()
        parents = {
            key: own.get(key, roots[key]) for key in ("pids", "memory", "freezer", "cpuacct") if key in roots
        }
        if "freezer" not in parents and cgroups.V2 in roots:
            parents[cgroups.V2] = own.get(cgroups.V2, roots[cgroups.V2])
        return {key: path for key, path in parents.items() if os.access(path, os.W_OK)}

    @classmethod
    def create(cls, limits: Limits) -> _SeatCgroup | None:
        name = f"{CGROUP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:10]}"
        dirs: dict[str, Path] = {}
        fds: list[int] = []
        memory = str(limits.memory_mb * MB)
        settings = {
            "pids": {"pids.max": str(limits.pids)},
            "memory": {"memory.limit_in_bytes": memory, "memory.memsw.limit_in_bytes": memory},
            "freezer": {},
            "cpuacct": {},
            cgroups.V2: {"pids.max": str(limits.pids), "memory.max": memory, "memory.swap.max": "0"},
        }
        for key, parent in cls.parents().items():
            path = parent / name
            try:
                path.mkdir()
                for file, value in settings[key].items():
                    if (path / file).exists() and not (key == cgroups.V2 and file.split(".")[0] in dirs):
                        (path / file).write_text(value)
                fds.append(os.open(path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
            except OSError as exc:
                log.debug("%s cgroup unavailable: %s", key, exc)
                with contextlib.suppress(OSError):
                    path.rmdir()
                continue
            dirs[key] = path
        return cls(dirs, fds) if dirs else None

    @staticmethod
    def remove_stale(min_age_s: float | None = STALE_CGROUP_AGE_S, prefix: str = CGROUP_PREFIX) -> None:
        """Clean up after referees that died without cleaning up: thaw and kill the agents left in groups
        whose referee is gone (a frozen v1 task ignores its pending SIGKILL until thawed), and remove
        empty ``arena-*`` groups.

        ``min_age_s=None`` ignores the age (only safe when nobody else launches agents meanwhile).
        """
        now = time.time()
        for parent in _SeatCgroup.parents().values():
            try:
                candidates = list(parent.glob(f"{prefix}*"))
            except OSError:
                continue
            for path in candidates:
                owner = path.name[len(CGROUP_PREFIX) :].split("-", 1)[0]
                if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                    for file, value in (("freezer.state", "THAWED"), ("cgroup.freeze", "0")):
                        with contextlib.suppress(OSError):
                            (path / file).write_text(value)
                    _kill_pids(_read_pids(path))
                with contextlib.suppress(OSError):  # busy (still in use) or already gone
                    old = min_age_s is None or now - path.stat().st_mtime >= min_age_s
                    if old and not (path / "cgroup.procs").read_text().strip():
                        path.rmdir()

    def pids(self) -> list[int]:
        return _read_pids(self.path)

    def kill_all(self) -> None:
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            _kill_pids(pids)
            if self.freezer is not None:
                self.freezer.thaw()  # a frozen v1 task dies only once thawed
            time.sleep(0.01)

    def remove(self) -> None:
        if self.freezer is not None:
            self.freezer.close()
        for fd in self.procs_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        for path in self.dirs.values():
            for _ in range(100):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)  # the last task may still be exiting
            else:
                log.warning("could not remove cgroup %s", path)

    def exists(self) -> bool:
        return any(path.exists() for path in self.dirs.values())


def _read_pids(path: Path) -> list[int]:
    try:
        return [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def _kill_pids(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


class _TailReader(threading.Thread):
    """Drains a pipe into a buffer that keeps only the last ``limit`` bytes."""

    def __init__(self, fd: int, limit: int) -> None:
        super().__init__(name=f"stderr-{fd}", daemon=True)
        self.fd = fd
        self.limit = limit
        self.total = 0
        self._buf = bytearray()
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._eof = threading.Event()

    def run(self) -> None:
        try:
            self._pump()
        finally:
            self._eof.set()

    def drain(self, timeout: float) -> None:
        """Wait (up to ``timeout``) until every writer has closed the pipe and all was read."""
        self._eof.wait(timeout)

    def _pump(self) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        while not self._stop_event.is_set():
            if not poller.poll(100):
                continue
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self.total += len(chunk)
                self._buf += chunk
                if len(self._buf) > self.limit:
                    del self._buf[: len(self._buf) - self.limit]

    def text(self) -> str:
        with self._lock:
            data = bytes(self._buf)
            dropped = self.total - len(data)
        text = data.decode("utf-8", errors="replace")
        return f"[... {dropped} earlier bytes dropped ...]\n{text}" if dropped > 0 else text

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=1.0)
        with contextlib.suppress(OSError):
            os.close(self.fd)


class LocalAgentProcess(AgentProcess):
    """One agent subprocess (maybe inside bubblewrap) and its pipes, temp folder and cgroup."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        channel: Channel,
        stderr: _TailReader,
        workdir: str | None,
        cgroup: _SeatCgroup | None,
        limits: Limits,
        *,
        via_bwrap: bool = False,
    ) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.channel = channel
        self.workdir = workdir
        self._stderr = stderr
        self._cgroup = cgroup
        self._limits = limits
        self._exit: ExitInfo | None = None
        self._killed_by_us = False
        self._dead = False
        self._drained = False
        self._harness_pid: int | None = None
        self.via_bwrap = via_bwrap
        self._data_root: str | None = None  # unisolated: a host folder
        self._bwrap_data: _BwrapDataFolder | None = None

    def _reap(self, block: bool) -> ExitInfo | None:
        if self._exit is not None:
            return self._exit
        try:
            pid, status, usage = os.wait4(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            self._exit = ExitInfo(returncode=self.proc.returncode, detail="reaped elsewhere")
            return self._exit
        if pid == 0:
            return None
        code = os.waitstatus_to_exitcode(status)
        self.proc.returncode = code  # keep Popen consistent (no "still running" warning)
        if self.via_bwrap and code > 128:
            code = 128 - code  # bubblewrap reports a child killed by signal N as exit status 128 + N
        oom = (
            code == -signal.SIGKILL
            and not self._killed_by_us
            and (
                bool(self.memory_exhausted())
                or usage.ru_maxrss * 1024 >= OOM_RSS_FRACTION * self._limits.memory_mb * MB
            )
        )
        detail = ""
        if code == -signal.SIGXCPU or (
            code == -signal.SIGKILL and usage.ru_utime + usage.ru_stime >= self._limits.cpu_time_s
        ):
            detail = f"CPU time limit of {self._limits.cpu_time_s} s exceeded"
        elif oom:
            detail = (
                self.memory_exhausted()
                or f"killed near its memory limit (peak RSS {usage.ru_maxrss // 1024} MB)"
            )
        self._exit = ExitInfo(returncode=code, oom_killed=oom, detail=detail)
        return self._exit

    def poll_exit(self) -> ExitInfo | None:
        """Exit information if the process has ended, else ``None``."""
        return self._reap(block=False)

    def wait_exit(self, timeout: float) -> ExitInfo | None:
        """Wait up to ``timeout`` seconds for the process to end."""
        deadline = time.monotonic() + timeout
        delay = 0.001
        while True:
            info = self._reap(block=False)
            if info is not None or time.monotonic() >= deadline:
                return info
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def stderr_log(self) -> str:
        """The tail of the agent's stderr (complete up to its exit once the process has ended)."""
        if self._exit is not None and not self._drained:
            self._drained = True
            self._stderr.drain(STDERR_DRAIN_S)
        return self._stderr.text()

    def _process_tree(self) -> list[int]:
        """The agent's processes: its pids cgroup when there is one, else the launched process and its
        descendants (``/proc/<pid>/task/<tid>/children``)."""
        if self._cgroup is not None:
            pids = self._cgroup.pids()
            if pids:
                return pids
        found, queue = [], [self.pid]
        while queue:
            pid = queue.pop()
            found.append(pid)
            with contextlib.suppress(OSError):
                for task in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{task}/children") as handle:
                        queue.extend(int(child) for child in handle.read().split())
        return found

    def pin_cpus(self, cpus: frozenset[int]) -> bool:
        """Set the affinity of every thread of every agent process (new ones inherit it)."""
        pinned = False
        for pid in self._process_tree():
            with contextlib.suppress(OSError):
                for task in os.listdir(f"/proc/{pid}/task"):
                    with contextlib.suppress(OSError):
                        os.sched_setaffinity(int(task), cpus)
                        pinned = True
        return pinned

    def freeze(self) -> bool:
        """Freeze the agent's cgroup (every process it has, however it forked or detached)."""
        freezer = self._cgroup.freezer if self._cgroup is not None else None
        if freezer is None or self._dead:
            return False
        try:
            freezer.freeze()
        except OSError:
            return False
        return True

    def thaw(self) -> None:
        """Let the agent's cgroup run again."""
        if self._cgroup is not None and self._cgroup.freezer is not None:
            self._cgroup.freezer.thaw()

    def harness_pid(self) -> int:
        """The harness process: the launched process itself, or under bubblewrap the first process down
        the chain of first children that runs the harness (bubblewrap's own init sits in between)."""
        if self._harness_pid is None:
            self._harness_pid = 0
            pid = self.pid
            for _ in range(4):
                try:
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
                except OSError:
                    break
                if b"arena_harness" in cmdline and b"bwrap" not in cmdline.split(b"\0", 1)[0]:
                    self._harness_pid = pid
                    break
                if not children:
                    break
                pid = int(children[0])
        return self._harness_pid

    def data_root(self) -> str | None:
        """The data folder: bubblewrap's tmpfs through the sandbox's mount namespace, else a host folder;
        ``None`` once the sandbox is gone."""
        if self._bwrap_data is not None:
            if self._dead:
                return None
            try:
                return self._bwrap_data.root()
            except (OSError, ValueError, SandboxError):
                return None
        return self._data_root

    def cpu_usage(self) -> cgroups.CpuUsage | None:
        """The agent's cgroup CPU counter (a new open file each call; the caller closes it)."""
        return cgroups.CpuUsage.for_dirs(self._cgroup.dirs) if self._cgroup is not None else None

    def memory_exhausted(self, grace: float = 0.0) -> str:
        """From the agent's memory cgroup: an OOM kill, or usage that reached ``Limits.memory_mb``."""
        watch = self._cgroup.memory if self._cgroup is not None else None
        return watch.exhausted(grace) if watch is not None else ""

    def kill(self) -> None:
        """SIGKILL the whole process group (and cgroup), reap, close pipes, remove the temp folder."""
        if self._dead:
            return
        self._dead = True
        if self._exit is None:
            self._killed_by_us = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        self.thaw()  # a frozen (cgroup v1) process ignores SIGKILL until thawed
        if self._cgroup is not None:
            self._cgroup.kill_all()
        self._reap(block=True)
        # Group members forked while the first SIGKILL was being delivered: once more.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        if self._cgroup is not None:
            self._cgroup.kill_all()
            self._cgroup.remove()
        self.channel.close()
        if self._bwrap_data is not None:
            self._bwrap_data.close()
        self._stderr.drain(STDERR_DRAIN_S)  # the last words of the process, if nothing else holds the pipe
        self._stderr.stop()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)


class LocalSandbox(Sandbox):
    """Runs each agent as a local subprocess with rlimits, inside bubblewrap when available."""

    name = "local"

    def __init__(
        self,
        *,
        python: str | None = None,
        use_bwrap: bool | None = None,
        use_cgroup: bool = True,
        address_space_slack_mb: int = ADDRESS_SPACE_SLACK_MB,
        allow_unisolated: bool | None = None,
    ) -> None:
        """``use_bwrap=None`` means "if installed"; ``True`` requires it; ``False`` never uses it (the
        caller's explicit choice of plain subprocesses, e.g. ``--no-bwrap``). When ``bwrap`` is missing
        with ``use_bwrap=None``, plain subprocesses need ``allow_unisolated`` (default
        ``$SANDBOX_ALLOW_UNISOLATED``), else ``SandboxError``. Without bubblewrap every sandbox logs a
        warning when it is created (each duel, each live game)."""
        self.python = python or sys.executable
        found = bwrap_path()
        if use_bwrap and not found:
            raise SandboxError(
                "bubblewrap requested but `bwrap` is not installed (apt-get install bubblewrap)"
            )
        if use_bwrap is None and not found:
            allowed = unisolated_allowed() if allow_unisolated is None else allow_unisolated
            if not allowed:
                raise SandboxError(
                    "bubblewrap is not installed, and without it uploaded agents would run as plain "
                    "subprocesses that can read this machine's secrets and use its network: install it "
                    f"(apt-get install bubblewrap), use the Docker sandbox, or set {ALLOW_UNISOLATED_ENV}=1 "
                    "to run trusted agents unisolated"
                )
        self.bwrap = found if use_bwrap is not False else None
        #: The host (uid, gid) agents run as: ``AGENT_USER``'s when we are root, else ``None`` (ours).
        self.run_as = agent_host_user() if self.bwrap else None
        self.setpriv = shutil.which("setpriv") if self.run_as is not None else None
        if self.run_as is not None and self.setpriv is None:
            raise SandboxError("the worker runs as root and `setpriv` (util-linux) is missing: install it")
        self.use_cgroup = use_cgroup
        if use_cgroup:
            _SeatCgroup.remove_stale()
        self.address_space_slack_mb = address_space_slack_mb
        if self.bwrap:
            self.isolation = (
                "local subprocess inside bubblewrap: no network, an unprivileged host uid in a user "
                f"namespace ({AGENT_USER!r} when the worker is root), "
                "read-only system and agent folder, a seccomp filter refusing what Docker's default "
                "profile refuses, rlimits and per-agent cgroups; weaker than Docker (no CPU quota)"
            )
        else:
            self.isolation = (
                "local subprocess WITHOUT bubblewrap: rlimits only; the agent can read the referee's files "
                "and use the network; much weaker than Docker, for trusted code only"
            )
            why = "disabled" if found else f"not installed, {ALLOW_UNISOLATED_ENV}=1"
            log.warning("UNISOLATED AGENTS (bubblewrap %s): %s", why, self.isolation)

    # -- command line --------------------------------------------------------------------------------

    def _python_roots(self) -> list[str]:
        roots = {
            sys.prefix,
            sys.base_prefix,
            sys.exec_prefix,
            sys.base_exec_prefix,
            str(Path(self.python).resolve().parent.parent),
            str(Path(self.python).absolute().parent.parent),
        }
        keep = sorted(r for r in roots if r and r not in ("/", "/usr") and not r.startswith("/usr/"))
        # Drop roots nested in another root.
        return [r for r in keep if not any(r != o and r.startswith(o.rstrip("/") + "/") for o in keep)]

    def _bwrap_command(
        self,
        agent_dir: str,
        limits: Limits,
        seccomp_fd: int | None = None,
        data_fds: tuple[int, int | None] | None = None,
        userns_fd: int | None = None,
    ) -> list[str]:
        """The bubblewrap command line. ``data_fds`` (info, block): the sandbox gets its data folder, a
        tmpfs of ``limits.data_mb``, says where its first process is on the info descriptor and, with a
        block descriptor, waits before running the harness until it is written (``_BwrapDataFolder``).
        ``userns_fd`` (we are root): the user namespace of ``_agent_userns``; bubblewrap sets the sandbox
        up as root of it (host root, without capabilities outside it), and ``setpriv`` drops the harness
        to ``SANDBOX_UID`` (``AGENT_USER`` on the host) with no capabilities and no new privileges."""
        cmd = [self.bwrap or "bwrap"]
        if userns_fd is None:  # bubblewrap makes the user namespace, mapping SANDBOX_UID to our own uid
            cmd += ["--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
            if _bwrap_supports(cmd[0], "--disable-userns"):
                cmd += ["--disable-userns"]  # no nested user namespaces: no caps, no chroot, no mounts inside
        else:  # ours (we are root): every namespace of --unshare-all but the user one, which is given
            cmd += ["--userns", str(userns_fd), "--unshare-ipc", "--unshare-pid", "--unshare-net"]
            cmd += ["--unshare-uts", "--unshare-cgroup-try", "--uid", "0", "--gid", "0"]
            cmd += [arg for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP") for arg in ("--cap-add", cap)]
        cmd += ["--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"]
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            path = Path("/") / name
            if path.is_symlink():
                cmd += ["--symlink", os.readlink(path), str(path)]
            elif path.is_dir():
                cmd += ["--ro-bind", str(path), str(path)]
        for name in _ETC_FILES:
            if (Path("/etc") / name).exists():
                cmd += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
        # The private /tmp first: an interpreter or checkout that lives under the host's /tmp (a CI clone)
        # is then bound on top of it instead of being hidden by it.
        # World-writable: when we are root, bubblewrap makes them as (namespaced) root for the agent's uid.
        cmd += ["--perms", "1777", "--size", str(limits.tmpfs_mb * MB), "--tmpfs", SANDBOX_TMP]
        cmd += ["--perms", "1777", "--dir", SANDBOX_HOME]
        for root in self._python_roots():
            for parent in reversed(Path(root).parents[:-1]):  # bubblewrap would make them 0700
                cmd += ["--perms", "0755", "--dir", str(parent)]
            cmd += ["--ro-bind", root, root]
        cmd += ["--perms", "0755", "--dir", "/arena"]
        cmd += ["--ro-bind", str(HARNESS_PATH), "/arena/arena_harness.py"]
        cmd += ["--ro-bind", agent_dir, "/agent"]
        cmd += ["--proc", "/proc", "--dev", "/dev"]
        # /dev/shm would otherwise be an unbounded tmpfs
        cmd += ["--perms", "1777", "--size", str(SHM_MB * MB), "--tmpfs", "/dev/shm"]  # noqa: S108
        if data_fds is not None:
            cmd += ["--perms", "0700", "--size", str(limits.data_mb * MB), "--tmpfs", DATA_DIR_IN_SANDBOX]
            cmd += ["--info-fd", str(data_fds[0])]
            if data_fds[1] is not None:
                cmd += ["--block-fd", str(data_fds[1])]
        if seccomp_fd is not None:
            cmd += ["--seccomp", str(seccomp_fd)]  # Docker's default refusals (sandbox/seccomp.py)
        cmd += ["--remount-ro", "/", "--chdir", "/agent", "--"]
        if userns_fd is not None:  # the harness as SANDBOX_UID, nothing left of root (execve keeps the pid)
            cmd += [self.setpriv or "setpriv", "--reuid", str(SANDBOX_UID), "--regid", str(SANDBOX_UID)]
            cmd += ["--clear-groups", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all", "--"]
        cmd += [self.python, *HARNESS_PYTHON_FLAGS, "/arena/arena_harness.py", "--agent-dir", "/agent"]
        return cmd

    @staticmethod
    def _environment(home: str, tmp: str, extra: dict[str, str]) -> dict[str, str]:
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "TMPDIR": tmp,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "PYTHONNOUSERSITE": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        env.update(extra)
        return env

    def _preexec(self, limits: Limits, cgroup: _SeatCgroup | None):
        address_space = (limits.memory_mb + self.address_space_slack_mb) * MB
        rlimits = [
            (resource.RLIMIT_AS, (address_space, address_space)),
            (resource.RLIMIT_CPU, (limits.cpu_time_s, limits.cpu_time_s + 5)),
            (resource.RLIMIT_FSIZE, (limits.file_size_mb * MB, limits.file_size_mb * MB)),
            (resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files)),
            (resource.RLIMIT_CORE, (0, 0)),
        ]
        if cgroup is None and os.geteuid() != 0:
            # RLIMIT_NPROC counts every process of the real uid (and never binds root).
            nproc = limits.pids + _count_own_processes()
            rlimits.append((resource.RLIMIT_NPROC, (nproc, nproc)))
        procs_fds = tuple(cgroup.procs_fds) if cgroup is not None else ()
        prctl = _prctl
        setrlimit = resource.setrlimit
        write = os.write
        getpid = os.getpid

        def preexec() -> None:  # runs in the child between fork and exec: C-level calls only
            for procs_fd in procs_fds:
                write(procs_fd, b"%d" % getpid())
            if prctl is not None:
                prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            for which, value in rlimits:
                setrlimit(which, value)

        return preexec

    # -- launch --------------------------------------------------------------------------------------

    def launch(self, spec: LaunchSpec) -> LocalAgentProcess:
        """Start the harness on ``spec.agent`` (a folder holding ``player.py``), with its data folder
        filled from ``spec.data`` when ``spec.limits.data_mb`` is positive."""
        agent_dir = Path(spec.agent).resolve()
        if not agent_dir.is_dir():
            raise SandboxError(f"agent folder {spec.agent!r} does not exist")
        limits = spec.limits
        has_data = limits.data_mb > 0
        archive = spec.data.archive if spec.data is not None else b""
        # Inside bubblewrap everything writable is a tmpfs: no host folder (nothing to leak if we die).
        workdir = None if self.bwrap else tempfile.mkdtemp(prefix="arena-local-")
        staged: str | None = None  # a readable copy of a folder the agent's user could not open
        if self.bwrap and self.run_as is not None and agent_dir.stat().st_mode & 0o005 != 0o005:
            staged, agent_dir = _stage_readable(agent_dir)
        cgroup = _SeatCgroup.create(limits) if self.use_cgroup else None
        fds: list[int] = []
        pass_fds: tuple[int, ...] = ()
        data_pipes: tuple[int, int | None] | None = None  # (info read end, block write end), bubblewrap
        data_root: str | None = None
        try:
            extra_env = spec.harness_env()
            if workdir is None:
                seccomp_fd = seccomp.program_fd()
                if seccomp_fd is not None:
                    fds.append(seccomp_fd)
                    pass_fds = (seccomp_fd,)
                data_fds = None
                if has_data:
                    info_r, info_w = os.pipe2(os.O_CLOEXEC)
                    fds += [info_r, info_w]
                    block_r = block_w = None
                    # something to fill, or (we are root) the folder to hand to the agent: hold the harness
                    if self.run_as is not None or check_archive(archive, limits.data_mb * MB)[1]:
                        block_r, block_w = os.pipe2(os.O_CLOEXEC)
                        fds += [block_r, block_w]
                    data_fds, data_pipes = (info_w, block_r), (info_r, block_w)
                    pass_fds += tuple(fd for fd in data_fds if fd is not None)
                    extra_env[DATA_DIR_ENV] = DATA_DIR_IN_SANDBOX
                userns_fd = None
                if self.run_as is not None:
                    userns_fd = _agent_userns(*self.run_as)
                    fds.append(userns_fd)
                    pass_fds += (userns_fd,)
                cmd = self._bwrap_command(str(agent_dir), limits, seccomp_fd, data_fds, userns_fd)
                env = self._environment(SANDBOX_HOME, SANDBOX_TMP, extra_env)
                cwd = "/"
            else:
                local_agent = Path(workdir) / "agent"
                shutil.copytree(agent_dir, local_agent, symlinks=True)
                for sub in ("home", "tmp"):
                    (Path(workdir) / sub).mkdir()
                if has_data:  # unisolated: a plain folder, its cap checked only when read back
                    data_root = str(Path(workdir) / "data")
                    os.mkdir(data_root, 0o700)
                    fill_folder(archive, data_root, limits.data_mb * MB)
                    extra_env[DATA_DIR_ENV] = data_root
                cmd = [self.python, *HARNESS_PYTHON_FLAGS, str(HARNESS_PATH), "--agent-dir", str(local_agent)]
                env = self._environment(str(Path(workdir, "home")), str(Path(workdir, "tmp")), extra_env)
                cwd = str(local_agent)
            to_child_r, to_child_w = os.pipe2(os.O_CLOEXEC)
            from_child_r, from_child_w = os.pipe2(os.O_CLOEXEC)
            err_r, err_w = os.pipe2(os.O_CLOEXEC)
            fds += [to_child_r, to_child_w, from_child_r, from_child_w, err_r, err_w]
            proc = subprocess.Popen(
                cmd,
                stdin=to_child_r,
                stdout=from_child_w,
                stderr=err_w,
                cwd=cwd,
                env=env,
                start_new_session=True,
                preexec_fn=self._preexec(limits, cgroup),
                pass_fds=pass_fds,
            )
        except (OSError, ValueError, subprocess.SubprocessError, shutil.Error) as exc:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            if cgroup is not None:
                cgroup.remove()
            for folder in (workdir, staged):
                if folder is not None:
                    shutil.rmtree(folder, ignore_errors=True)
            if isinstance(exc, DataError):  # the archive's own content (check_archive, fill_folder)
                raise AgentDataRefused(str(exc), spec) from exc
            raise SandboxError(f"could not start the local agent process: {exc}") from exc
        for fd in (to_child_r, from_child_w, err_w, *pass_fds):
            os.close(fd)
        stderr = _TailReader(err_r, limits.log_bytes)
        stderr.start()
        channel = Channel(from_child_r, to_child_w)
        agent = LocalAgentProcess(
            proc, channel, stderr, workdir or staged, cgroup, limits, via_bwrap=bool(self.bwrap)
        )
        if data_pipes is not None:
            folder = _BwrapDataFolder(proc, data_pipes[0], self.run_as)
            agent._bwrap_data = folder
            if data_pipes[1] is not None:
                try:
                    folder.fill(data_pipes[1], archive, limits.data_mb * MB)
                except (OSError, ValueError, SandboxError) as exc:
                    agent.kill()
                    if isinstance(exc, DataError):  # the archive's own content: the agent's
                        raise AgentDataRefused(str(exc), spec) from exc
                    raise SandboxError(f"could not fill the agent's data folder: {exc}") from exc
        agent._data_root = data_root
        return agent


class _BwrapDataFolder:
    """The data tmpfs of a bubblewrap sandbox, reached through the mount namespace of the sandbox's first
    process (named on bubblewrap's ``--info-fd``). Filling it needs the harness held (``--block-fd``);
    reading it back does not, so an empty folder costs no wait at launch (the info is read when needed)."""

    def __init__(
        self, proc: subprocess.Popen[bytes], info_fd: int, owner: tuple[int, int] | None = None
    ) -> None:
        self.proc = proc
        self.owner = owner  # the host (uid, gid) of the sandbox's files: AGENT_USER's when we are root
        self.info_fd: int | None = info_fd
        self.path: str | None = None

    def root(self) -> str:
        """The folder's path as we reach it, once the sandbox's first process pivoted into its root."""
        if self.path is not None:
            return self.path
        if self.info_fd is None:
            raise SandboxError("the sandbox's data folder is gone")
        try:
            deadline = time.monotonic() + DATA_SETUP_TIMEOUT_S
            info = b""
            while b"}" not in info:
                ready, _, _ = select.select([self.info_fd], [], [], max(0.0, deadline - time.monotonic()))
                chunk = os.read(self.info_fd, 4096) if ready else b""
                if not chunk:
                    raise SandboxError(
                        f"bubblewrap did not say where the sandbox is (exit {self.proc.poll()})"
                    )
                info += chunk
        finally:
            self.close()
        root = f"/proc/{int(json.loads(info)['child-pid'])}/root"
        host_root = os.stat("/").st_dev
        while True:  # the first process pivots into the new root when every mount is in place
            with contextlib.suppress(OSError):
                if os.stat(root).st_dev != host_root and os.path.isdir(root + DATA_DIR_IN_SANDBOX):
                    break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SandboxError("the sandbox's data folder did not appear")
            time.sleep(0.002)
        self.path = root + DATA_DIR_IN_SANDBOX
        return self.path

    def fill(self, block_fd: int, archive: bytes, cap_bytes: int) -> None:
        """Write the archive into the folder, then release the harness."""
        try:
            root = self.root()
            if self.owner is not None:  # bubblewrap made it as (namespaced) root: the agent's, mode 0700
                fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
                try:
                    os.fchown(fd, *self.owner)
                finally:
                    os.close(fd)
            with _file_identity(self.owner):
                fill_folder(archive, root, cap_bytes)
            os.write(block_fd, b"1")
        finally:
            os.close(block_fd)

    def close(self) -> None:
        if self.info_fd is not None:
            os.close(self.info_fd)
            self.info_fd = None
