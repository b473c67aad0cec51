"""The local sandbox: the agent runs as a subprocess of the referee, under resource limits.

Isolation, strongest first:

* **bubblewrap** (when ``bwrap`` is installed, the default then): new user, PID, network, IPC, UTS and
  mount namespaces (``--unshare-all``: no network at all), as uid/gid 65534 (an unprivileged host user: ours,
  or ``AGENT_USER`` when we are root, never host root: see ``local_user.agent_userns``), a fresh root holding
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
descendant. ``Limits.cpus`` is not enforced locally. Each agent's cgroups (``SeatCgroup``) also carry
its memory limit (the kernel's OOM accounting, as in Docker) and its freezer (``freeze``/``thaw``).

The agent is killed when the referee dies (``--die-with-parent`` / ``PR_SET_PDEATHSIG``); Linux ties that
to the *thread* that launched it, so launch agents from the thread that plays the duel (``play_duel``
does).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from run_duel.agent_data import DATA_DIR_ENV, DATA_DIR_IN_SANDBOX, MB, DataError, check_archive, fill_folder
from run_duel.channel import Channel
from run_duel.harness import HARNESS_DIR, PYTHON_HARNESS_FILES
from run_duel.sandbox import seccomp
from run_duel.sandbox.base import (
    HARNESS_PYTHON_FLAGS,
    AgentDataRefused,
    LaunchSpec,
    Limits,
    Sandbox,
    SandboxError,
)
from run_duel.sandbox.local_bwrap import (
    ALLOW_UNISOLATED_ENV,
    BwrapDataFolder,
    bwrap_path,
    bwrap_supports,
    unisolated_allowed,
)
from run_duel.sandbox.local_cgroup import SeatCgroup
from run_duel.sandbox.local_process import LocalAgentProcess
from run_duel.sandbox.local_user import AGENT_USER, SANDBOX_UID, agent_host_user, agent_userns, stage_readable
from run_duel.sandbox.tail_reader import TailReader

__all__ = ["AGENT_USER", "ALLOW_UNISOLATED_ENV", "LocalAgentProcess", "LocalSandbox", "bwrap_path"]

log = logging.getLogger(__name__)

#: The harness script (its sibling modules, ``PYTHON_HARNESS_FILES``, are bound next to it).
HARNESS_PATH = HARNESS_DIR / PYTHON_HARNESS_FILES[0]
#: Address space allowed on top of ``Limits.memory_mb``: RLIMIT_AS counts mapped (not resident) memory,
#: so Python + numpy need room beyond what Docker's RSS-based limit would count.
ADDRESS_SPACE_SLACK_MB = 256
#: Size of the private /dev/shm inside bubblewrap (multiprocessing and some BLAS builds use it).
SHM_MB = 16
_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group", "nsswitch.conf")
_PR_SET_PDEATHSIG = 1
#: The private tmpfs inside bubblewrap (not the host's /tmp).
SANDBOX_TMP = "/tmp"  # noqa: S108
#: The agent's HOME inside bubblewrap: an empty folder of the private tmpfs (``/tmp`` itself may hold the
#: mount points of an interpreter that lives under the host's /tmp).
SANDBOX_HOME = f"{SANDBOX_TMP}/home"


def _libc_prctl() -> Callable[..., int] | None:
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
            SeatCgroup.remove_stale()
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
        block descriptor, waits before running the harness until it is written (``BwrapDataFolder``).
        ``userns_fd`` (we are root): the user namespace of ``agent_userns``; bubblewrap sets the sandbox
        up as root of it (host root, without capabilities outside it), and ``setpriv`` drops the harness
        to ``SANDBOX_UID`` (``AGENT_USER`` on the host) with no capabilities and no new privileges."""
        cmd = [self.bwrap or "bwrap"]
        if userns_fd is None:  # bubblewrap makes the user namespace, mapping SANDBOX_UID to our own uid
            cmd += ["--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
            if bwrap_supports(cmd[0], "--disable-userns"):
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
        for name in PYTHON_HARNESS_FILES:
            cmd += ["--ro-bind", str(HARNESS_DIR / name), f"/arena/{name}"]
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

    def _preexec(self, limits: Limits, cgroup: SeatCgroup | None):
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
            staged, agent_dir = stage_readable(agent_dir)
        cgroup = SeatCgroup.create(limits) if self.use_cgroup else None
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
                    userns_fd = agent_userns(*self.run_as)
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
        stderr = TailReader(err_r, limits.log_bytes)
        stderr.start()
        channel = Channel(from_child_r, to_child_w)
        agent = LocalAgentProcess(
            proc, channel, stderr, workdir or staged, cgroup, limits, via_bwrap=bool(self.bwrap)
        )
        if data_pipes is not None:
            data_folder = BwrapDataFolder(proc, data_pipes[0], self.run_as)
            agent._bwrap_data = data_folder
            if data_pipes[1] is not None:
                try:
                    data_folder.fill(data_pipes[1], archive, limits.data_mb * MB)
                except (OSError, ValueError, SandboxError) as exc:
                    agent.kill()
                    if isinstance(exc, DataError):  # the archive's own content: the agent's
                        raise AgentDataRefused(str(exc), spec) from exc
                    raise SandboxError(f"could not fill the agent's data folder: {exc}") from exc
        agent._data_root = data_root
        return agent
