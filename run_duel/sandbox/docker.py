"""The Docker sandbox: a locked-down container per seat, fresh per launch, or warm (``docker_warm``).

With ``reuse`` on (``ReusePolicy``), a launch forks a fresh agent process in an idle warm container of
the same image, limits and revision, kept by this process between duels (``WarmAgentProcess``); the
rest of this docstring describes the fresh container, whose settings a warm one shares.

Transport: a Unix stream socket. For every launch the referee side creates a private folder holding a
listening socket, bind-mounts that folder read-only at ``/run/arena`` in the container, and starts the
image's entrypoint with ``--connect /run/arena/agent.sock``. The folder is owned by root:10001 with mode
0710 and the socket belongs to uid 10001 with mode 0600: only the agent's user (and root) can connect,
and nothing is world-readable or world-writable. The container has no network at all. The socket is bound
through a descriptor of its folder (``_bind_anonymously``), so the container never sees its host path.

Start-up: an image whose entrypoint is our Python harness runs this checkout's harness instead, copied
into the launch folder, as ``python3 -I -B -u`` (``container_config``), so no code of the agent's packages
runs before its seat is ready, whatever the image's environment says (images built before carry
``PYTHONPATH``). The socket gets its name only once the data folder is filled; our C++ images' launcher
waits for it. A fill that fails because of the archive's own content raises ``AgentDataRefused`` (the
agent's), never ``SandboxError``.

Container settings (see ``container_config``): user 10001, ``network_mode=none``, read-only root, a
size-capped ``noexec`` tmpfs at /tmp, all capabilities dropped, ``no-new-privileges``, a pids limit,
memory limit == memory+swap limit, a CPU quota, ulimits (file size, open files, no core dumps, a
host-wide nproc backstop), capped json-file logs, an init process (tini), labels for the reaper, and only
the environment variables of ``LaunchSpec.env``.

The agent's stderr is read through the Docker logs API, capped to ``Limits.log_bytes`` (tail). ``kill``
removes the container by id (force), whatever happened, and deletes the socket folder; while the engine
does not answer (a restart) it retries for up to ``ENGINE_PATIENCE_S``. Containers of failed launches are
removed by the sandbox's remover, a tracked background thread that ``DockerSandbox.close`` waits for.

The image: ``LaunchSpec.agent`` names it as the revision recorded it (``<registry>/<repo>@sha256:<digest>``
with a registry). ``launch`` holds it through ``run_duel.images.ImageCache.use`` until the container
exists: pulled by digest if this engine lacks it (once per host), verified, and safe from the image
cache's trimming meanwhile. ``ImageUnavailable``/``ImageMissing``/``ImageDigestMismatch`` are
``SandboxError``s: infrastructure.

Engine failures are infrastructure, never a player's fault: when the engine does not answer, or a
container vanished or was killed through the engine's API (the engine shutting down, an operator, a
reaper), ``poll_exit``/``wait_exit`` raise ``EngineError`` (a ``SandboxError``) instead of reporting an
exit the referee would charge to the agent.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import logging
import os
import shutil
import socket
import struct
import tempfile
import threading
import time
import weakref
import zipfile
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

import docker
from docker.errors import DockerException, ImageNotFound, NotFound
from docker.types import LogConfig, Ulimit
from requests.exceptions import RequestException

from run_duel.agent_data import DATA_DIR_ENV, DATA_DIR_IN_SANDBOX, MB, DataError, fill_folder
from run_duel.channel import Channel
from run_duel.images import ImageCache, ImageUnavailable, parse_digest_ref
from run_duel.sandbox import cgroups
from run_duel.sandbox.base import (
    HARNESS_PYTHON_FLAGS,
    AgentDataRefused,
    AgentProcess,
    ExitInfo,
    LaunchSpec,
    Limits,
    Sandbox,
    SandboxError,
    has_agent_entry,
    runtime_dir,
)
from run_duel.sandbox.docker_client import get_client
from run_duel.sandbox.docker_warm import (
    CONTROL_TIMEOUT_S,
    HARNESS_FILE,
    ReusePolicy,
    WarmChannel,
    WarmContainer,
    WarmError,
    WarmKey,
    WarmPool,
    exit_info,
    new_pool_root,
    warm_capable,
    warm_key,
)

if TYPE_CHECKING:
    from run_duel.sandbox.local import _TailReader

log = logging.getLogger(__name__)

AGENT_UID = 10001
SOCKET_DIR_IN_CONTAINER = "/run/arena"
SOCKET_NAME = "agent.sock"
#: The harness copied into each warm container's launch folder (the factory runs this checkout's).
HARNESS_NAME = "arena_harness.py"
#: The agent's thread-count variables, in the container (cold) or each agent process (warm).
BASE_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
LABEL = "rl-arena"
LABEL_VALUE = "agent"
#: How long the harness may take to connect after the container started (Python start-up only: the
#: harness connects before importing player.py).
CONNECT_TIMEOUT_S = 20.0
#: RLIMIT_NPROC counts every process of uid 10001 on the host (all agents share that uid), so it is only
#: a backstop; the per-container cap is the pids cgroup (``Limits.pids``).
NPROC_BACKSTOP = 4096
RUNTIME_PREFIX = "rl-arena-docker-"
#: How long a removal keeps retrying while the engine does not answer (e.g. it is restarting).
ENGINE_PATIENCE_S = 60.0
#: What a call to the engine raises when the engine fails (requests' errors are ``OSError``s).
ENGINE_FAILURES = (DockerException, RequestException, OSError)


class EngineError(SandboxError):
    """The Docker engine failed (did not answer, lost or killed a container): infrastructure."""


def _runtime_base(folder: str | Path | None) -> Path:
    return Path(folder) if folder else runtime_dir()


def _proc_start_time(pid: int) -> str:
    """The kernel start time of ``pid`` (ticks since boot) — with the pid, identifies a process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
        return data[data.rindex(b")") + 2 :].split()[19].decode()
    except (OSError, ValueError, IndexError):
        return ""


_OWNER_PID = os.getpid()
_OWNER_START = _proc_start_time(_OWNER_PID)
_HOSTNAME = socket.gethostname()


def _owner_labels() -> dict[str, str]:
    pid = os.getpid()
    start = _OWNER_START if pid == _OWNER_PID else _proc_start_time(pid)
    return {f"{LABEL}.owner-pid": str(pid), f"{LABEL}.owner-start": start, f"{LABEL}.owner-host": _HOSTNAME}


def container_config(
    image: str, spec: LaunchSpec, socket_dir: str, *, agent_dir: str | None = None, warm: bool = False
) -> dict[str, Any]:
    """Keyword arguments for ``APIClient.create_container`` (host config included).

    With ``agent_dir`` (the image's entrypoint is our Python harness, ``warm_capable``) the container runs
    this checkout's harness, mounted with the launch folder, as ``python3 -I -B -u`` whatever the image's
    entrypoint says: an image built before the harness started isolated (``PYTHONPATH`` in its
    environment) never runs its packages' start-up hooks either. With ``warm`` too the container is a
    warm one (``docker_warm``): the harness runs in ``--warm`` mode (no init: the factory is PID 1), the
    container carries no duel labels (it serves many duels) and the duel's variables (``spec.env``) go
    to each agent process instead of the container."""
    limits: Limits = spec.limits
    warm_agent_dir = agent_dir if warm else None
    labels = {LABEL: LABEL_VALUE, f"{LABEL}.created": str(int(time.time()))}
    if warm_agent_dir is None:
        labels.update({f"{LABEL}.{key}": str(value) for key, value in spec.labels.items()})
    else:
        labels[f"{LABEL}.warm"] = "1"
        if "revision" in spec.labels:
            labels[f"{LABEL}.revision"] = str(spec.labels["revision"])
    labels.update(_owner_labels())
    memory = limits.memory_mb * MB
    file_size = limits.file_size_mb * MB
    # Two json-file files of 2x log_bytes each: the engine keeps between 2x and 4x log_bytes on disk, so
    # the last log_bytes of output (JSON framing included) always survive a rotation.
    log_max = max(limits.log_bytes * 2, 64 * 1024)
    api = get_client().api
    host_config = api.create_host_config(
        binds={socket_dir: {"bind": SOCKET_DIR_IN_CONTAINER, "mode": "ro"}},
        network_mode="none",
        read_only=True,
        tmpfs={
            "/tmp":  # noqa: S108 - the container's own tmpfs
            f"rw,noexec,nosuid,nodev,size={limits.tmpfs_mb}m,mode=1777",
            **(
                {
                    DATA_DIR_IN_SANDBOX: f"rw,noexec,nosuid,nodev,size={limits.data_mb}m,mode=0700,"
                    f"uid={AGENT_UID},gid={AGENT_UID}"
                }
                if limits.data_mb > 0
                else {}
            ),
        },
        shm_size=16 * MB,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        pids_limit=limits.pids,
        mem_limit=memory,
        memswap_limit=memory,
        mem_swappiness=0,
        nano_cpus=int(limits.cpus * 1e9),
        ulimits=[
            Ulimit(name="fsize", soft=file_size, hard=file_size),
            Ulimit(name="nofile", soft=limits.open_files, hard=limits.open_files),
            Ulimit(name="core", soft=0, hard=0),
            Ulimit(name="nproc", soft=NPROC_BACKSTOP, hard=NPROC_BACKSTOP),
            Ulimit(name="cpu", soft=limits.cpu_time_s, hard=limits.cpu_time_s + 5),
        ],
        log_config=LogConfig(type="json-file", config={"max-size": str(log_max), "max-file": "2"}),
        init=warm_agent_dir is None,
        oom_score_adj=500,
        ipc_mode="private",
        auto_remove=False,
    )
    env = dict(BASE_ENV)
    command = ["--connect", f"{SOCKET_DIR_IN_CONTAINER}/{SOCKET_NAME}"]
    extra: dict[str, Any] = {}
    if warm_agent_dir is None:
        env.update(spec.harness_env())
        if limits.data_mb > 0:
            env[DATA_DIR_ENV] = DATA_DIR_IN_SANDBOX
    else:
        command = ["--warm", f"{SOCKET_DIR_IN_CONTAINER}/{SOCKET_NAME}"]
    if agent_dir is not None:
        harness = f"{SOCKET_DIR_IN_CONTAINER}/{HARNESS_NAME}"
        command = ["--agent-dir", agent_dir, *command]
        extra["entrypoint"] = ["python3", *HARNESS_PYTHON_FLAGS, harness]
    return {
        **extra,
        "image": image,
        "command": command,
        "user": f"{AGENT_UID}:{AGENT_UID}",
        "environment": env,
        "labels": labels,
        "hostname": "agent",
        "network_disabled": True,
        "stdin_open": False,
        "tty": False,
        "host_config": host_config,
    }


def _exit_info(state: dict[str, Any]) -> ExitInfo | None:
    """ExitInfo from a container's ``State``; ``None`` while it runs."""
    status = state.get("Status")
    if state.get("Running") or status in ("created", "running", "restarting", "paused"):
        return None
    code = state.get("ExitCode")
    detail = state.get("Error") or ""
    # The init process exits 128+N when the harness was killed by signal N: report it as -N (POSIX style).
    returncode = -(code - 128) if isinstance(code, int) and 128 < code < 160 else code
    return ExitInfo(returncode=returncode, oom_killed=bool(state.get("OOMKilled")), detail=detail)


class DockerAgentProcess(AgentProcess):
    """A running agent container and its socket channel."""

    def __init__(
        self,
        container_id: str,
        channel: Channel,
        socket_dir: str,
        limits: Limits,
    ) -> None:
        self.container_id = container_id
        self.channel = channel
        self.socket_dir = socket_dir
        self.limits = limits
        self._created = time.time() - 5  # engine and host clocks are the same machine's; a margin anyway
        self._exit: ExitInfo | None = None
        self._log: str | None = None
        self._dead = False
        self._lock = threading.Lock()
        self._freezer: cgroups.Freezer | None = None
        self._memory: cgroups.MemoryWatch | None = None
        self._data_root: str | None = None

    def attach_cgroup(self, harness_pid: int) -> None:
        """Find the container's cgroups from its harness's pid (as this process sees it; 0 when the
        referee runs in another pid namespace, e.g. in a container itself): then ``freeze``/``thaw`` write
        the container's freezer file directly (µs, where the engine's pause takes milliseconds) and
        ``memory_exhausted`` reads its memory cgroup."""
        self._harness_pid = harness_pid  # for harness_pid(): the seat reads its scheduler statistics
        dirs = cgroups.cgroup_dirs_of(harness_pid) if harness_pid > 0 else {}
        dirs = dirs or cgroups.container_dirs(self.container_id)  # by id (``$AGENT_CGROUP_ROOT``)
        self._dirs = dirs
        self._freezer = cgroups.Freezer.for_dirs(dirs)
        self._memory = cgroups.MemoryWatch.for_dirs(dirs)

    def harness_pid(self) -> int:
        """The harness's pid as this process sees it (0 from another pid namespace)."""
        return getattr(self, "_harness_pid", 0)

    def cpu_usage(self) -> cgroups.CpuUsage | None:
        """The container's CPU counter (its cpuacct cgroup; a new open file, the caller closes it)."""
        return cgroups.CpuUsage.for_dirs(getattr(self, "_dirs", {}))

    def freeze(self) -> bool:
        """Freeze every process of the container (its cgroup), behind the engine's back: ``kill`` thaws."""
        if self._freezer is None or self._dead:
            return False
        try:
            self._freezer.freeze()
        except OSError:
            return False  # the container is gone: the referee finds out at its next message
        return True

    def thaw(self) -> None:
        """Let the container run again."""
        if self._freezer is not None:
            self._freezer.thaw()

    def memory_exhausted(self, grace: float = 0.0) -> str:
        """The container's OOM kills or memory limit hits (its memory cgroup); else the engine's OOMKilled."""
        if self._memory is not None:
            return self._memory.exhausted(grace)
        info = self._exit
        return "the engine reports it OOM-killed" if info is not None and info.oom_killed else ""

    def _state(self) -> dict[str, Any] | None:
        try:
            return get_client().api.inspect_container(self.container_id)["State"]
        except NotFound:
            return None

    def _killed_through_engine(self) -> bool:
        """True if someone stopped or killed the container through the engine's API (we never do before
        ``kill``): the engine shutting down, an operator, another process's reaper."""
        try:
            events = get_client().api.events(
                since=int(self._created),
                until=int(time.time()) + 1,
                filters={"container": self.container_id, "event": ["kill", "stop"]},
                decode=True,
            )
            return any(True for _ in events)
        except ENGINE_FAILURES as exc:
            raise EngineError(f"the Docker engine did not answer: {exc}") from exc

    def poll_exit(self) -> ExitInfo | None:
        """Exit information from the container state (including OOMKilled); ``None`` while running.

        Raises ``EngineError`` when the engine does not answer, lost the container, or killed it itself:
        the agent must not be charged for that."""
        if self._exit is not None:
            return self._exit
        if self._dead:
            return ExitInfo(returncode=None, detail="killed by the referee")
        try:
            state = self._state()
        except ENGINE_FAILURES as exc:
            raise EngineError(
                f"the Docker engine did not answer about container {self.container_id[:12]}: {exc}"
            ) from exc
        if state is None:
            raise EngineError(f"the agent container {self.container_id[:12]} vanished from the engine")
        info = _exit_info(state)
        if info is not None and info.returncode != 0 and self._killed_through_engine():
            raise EngineError(
                f"the agent container {self.container_id[:12]} was stopped through the Docker engine "
                f"(engine shutdown or an operator), exit code {state.get('ExitCode')}"
            )
        self._exit = info
        return info

    def wait_exit(self, timeout: float) -> ExitInfo | None:
        """Wait up to ``timeout`` seconds for the container to exit (the engine's wait call, no polling).
        Raises ``EngineError`` like ``poll_exit``."""
        info = self.poll_exit()
        if info is not None or timeout <= 0:
            return info
        with contextlib.suppress(*ENGINE_FAILURES):  # a timeout, or the engine failing: poll_exit tells
            get_client().api.wait(self.container_id, timeout=timeout)
        return self.poll_exit()

    def _fetch_log(self) -> str:
        cap = self.limits.log_bytes
        try:
            raw = get_client().api.logs(
                self.container_id, stdout=True, stderr=True, stream=False, tail=4000, timestamps=False
            )
        except NotFound:
            return ""
        except ENGINE_FAILURES as exc:
            return f"(stderr unavailable: {exc})"
        dropped = max(0, len(raw) - cap)
        text = raw[-cap:].decode("utf-8", errors="replace")
        return f"[... {dropped} earlier bytes dropped ...]\n{text}" if dropped else text

    def stderr_log(self) -> str:
        """The tail of the agent's stderr (and stray stdout), at most ``Limits.log_bytes`` bytes."""
        if self._log is not None:
            return self._log
        text = self._fetch_log()
        if self._exit is not None:
            self._log = text  # the container has exited: its log is final
        return text

    def data_root(self) -> str | None:
        """The container's data tmpfs, through the mount namespace of its first process."""
        return self._data_root

    def pin_cpus(self, cpus: frozenset[int]) -> bool:
        """Narrow the container's cpuset to ``cpus`` (one engine call, about 10 ms)."""
        try:
            get_client().api.update_container(self.container_id, cpuset_cpus=",".join(map(str, sorted(cpus))))
        except NotFound:
            return False  # the container is gone already: the referee finds out at its next message
        except ENGINE_FAILURES as exc:
            log.warning(
                "could not pin container %s to cpus %s: %s", self.container_id[:12], sorted(cpus), exc
            )
            return False
        return True

    def kill(self) -> None:
        """Keep the stderr tail and the exit state, then remove the container by id (force, retrying while
        the engine restarts) and the socket folder."""
        with self._lock:
            if self._dead:
                return
            self._dead = True
        self.channel.close()
        if self._freezer is not None:
            self._freezer.close()  # a frozen (cgroup v1) container would not die of the engine's SIGKILL
        try:
            if self._log is None:
                self._log = self._fetch_log()
            if self._exit is None:
                with contextlib.suppress(*ENGINE_FAILURES):
                    state = self._state()
                    self._exit = _exit_info(state) if state else None
        finally:
            _remove_container(self.container_id, patience=ENGINE_PATIENCE_S)
            shutil.rmtree(self.socket_dir, ignore_errors=True)
            _LIVE.discard(self)


class WarmAgentProcess(DockerAgentProcess):
    """One duel's agent process in a warm container (``docker_warm``): exit, pinning and clean-up go
    through the container's factory, stderr through a pipe; freezing is the container's cgroup's, as for
    a cold container (one seat per container)."""

    def __init__(
        self,
        container: WarmContainer,
        pool: WarmPool,
        channel: WarmChannel,
        stderr: _TailReader,
        limits: Limits,
    ) -> None:
        super().__init__(container.container_id, channel, container.socket_dir, limits)
        self.container = container
        self._pool = pool
        self._stderr = stderr

    def attach_warm(self, factory_pid: int, freezer: cgroups.Freezer | None, agent_pid: int = 0) -> None:
        """The container's memory cgroup and the freezer of the agent's own sub-cgroup
        (``_agent_freezer``): freezing the seat freezes the agent's processes, never the factory. The
        memory counters are this duel's: a container is only reused when memory never ran out in it
        (``kill``), so they are zero at every spawn."""
        dirs = cgroups.cgroup_dirs_of(factory_pid) if factory_pid > 0 else {}
        self._memory = cgroups.MemoryWatch.for_dirs(dirs)
        self._freezer = freezer
        self._dirs = dirs  # the container's cgroups (cpu_usage)
        self._harness_pid = agent_pid  # the agent process (harness_pid: its scheduler statistics)

    def poll_exit(self) -> ExitInfo | None:
        """The agent process's exit (from the factory); the container's when the factory is gone."""
        if self._exit is not None or self._dead:
            return super().poll_exit()
        try:
            info = exit_info(self.container.request({"type": "poll"}))
        except WarmError:
            return super().poll_exit()  # the container ended (or hangs): the engine tells
        self._exit = info
        return info

    def wait_exit(self, timeout: float) -> ExitInfo | None:
        """Wait up to ``timeout`` seconds for the agent process to exit (the factory waits)."""
        if self._exit is not None or self._dead or timeout <= 0:
            return self.poll_exit()
        try:
            reply = self.container.request(
                {"type": "wait", "timeout": timeout}, timeout=timeout + CONTROL_TIMEOUT_S
            )
        except WarmError:
            return super().wait_exit(timeout)
        self._exit = exit_info(reply)
        return self._exit

    def stderr_log(self) -> str:
        """The tail of this duel's stderr (and stdout), at most ``Limits.log_bytes`` bytes."""
        return self._stderr.text()

    def pin_cpus(self, cpus: frozenset[int]) -> bool:
        """Set the affinity of every thread of the agent's processes (the factory does; no engine call)."""
        try:
            return bool(self.container.request({"type": "pin", "cpus": sorted(cpus)}).get("ok"))
        except WarmError:
            return False

    def kill(self) -> None:
        """Have the factory kill every process of the duel and clean the container, then give the
        container back to the pool: reused only when the referee ended the seat with ``close``, the
        clean-up found nothing left and memory never ran out; else retired (removed)."""
        with self._lock:
            if self._dead:
                return
            self._dead = True
        close_sent = getattr(self.channel, "close_sent", False)
        self.channel.close()
        if self._freezer is not None:
            self._freezer.close()  # the factory must run to clean up
        reusable = False
        try:
            reply = self.container.request({"type": "reap"})
            if self._exit is None:
                self._exit = exit_info(reply)
            if reply.get("problem"):
                log.warning("warm container %s retired: %s", self.container_id[:12], reply["problem"])
            reusable = close_sent and reply.get("clean") is True and not reply.get("oom")
            reusable = reusable and not self.memory_exhausted()
        except WarmError as exc:
            log.warning("warm container %s retired: %s", self.container_id[:12], exc)
        finally:
            self._stderr.drain(1.0)  # every writer is dead: the pipe is at its end
            self._stderr.stop()
            self._pool.give_back(self.container, reusable)
            _LIVE.discard(self)


#: The sub-cgroup (of the warm container's freezer cgroup) holding the duel's agent processes.
AGENT_SUBGROUP = "agent"


def _agent_freezer(container: WarmContainer) -> tuple[cgroups.Freezer | None, int]:
    """Move the freshly forked agent process (still waiting for its go byte, so it has no children) into
    a freezer sub-cgroup of its container, so that freezing the seat leaves the factory running; its
    descendants inherit the group. Returns that freezer and the agent's pid as this process sees it;
    ``(None, 0)`` when the container's cgroups are not visible here (the referee in another pid
    namespace): the seat then cannot be frozen. Raises ``WarmError`` when the
    container holds any other process than the factory and that agent process."""
    dirs = cgroups.cgroup_dirs_of(container.factory_pid) if container.factory_pid > 0 else {}
    for key, v2 in (("freezer", False), (cgroups.V2, True)):
        parent = dirs.get(key)
        if parent is None:
            continue
        others = [
            int(p) for p in (parent / "cgroup.procs").read_text().split() if int(p) != container.factory_pid
        ]
        if len(others) != 1:
            raise WarmError(f"the container holds unexpected processes: {others}")
        sub = parent / AGENT_SUBGROUP
        sub.mkdir(exist_ok=True)
        (sub / "cgroup.procs").write_text(str(others[0]))
        return cgroups.Freezer(sub, v2=v2), others[0]
    return None, 0


def _peer_pid(fd: int) -> int:
    """The pid of the process at the other end of a connected Unix socket (0 if not visible here)."""
    with contextlib.suppress(OSError):
        sock = socket.socket(fileno=os.dup(fd))
        with sock:
            raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", raw)[0]
    return 0


def _remove_container(container_id: str, *, patience: float = 1.0) -> bool:
    """Force-remove a container by id, retrying for ``patience`` seconds while the engine fails (it may
    be restarting). Logs (never raises) if it cannot; returns whether the container is gone."""
    deadline = time.monotonic() + patience
    delay = 0.05
    while True:
        try:
            get_client().api.remove_container(container_id, force=True, v=True)
            return True
        except NotFound:
            return True
        except ENGINE_FAILURES as exc:
            if "removal of container" in str(exc) and "already in progress" in str(exc):
                return True
            if time.monotonic() >= deadline:
                log.error("could not remove container %s: %s", container_id[:12], exc)
                return False
        time.sleep(delay)
        delay = min(delay * 2, 1.0)


class Remover:
    """Background removal of agent containers, tracked so that ``join`` can wait for all of them."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="docker-remove")
        self._pending: set[Future[Any]] = set()
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], Any]) -> Future[Any]:
        """Run ``job`` (a teardown) in the background."""
        try:
            future = self._pool.submit(job)
        except RuntimeError:  # the interpreter is shutting down (atexit): no new threads, do it now
            future = Future()
            try:
                future.set_result(job())
            except Exception as exc:
                future.set_exception(exc)
            return future
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)
        return future

    def remove(self, container_id: str) -> Future[Any]:
        """Remove one container by id in the background."""
        return self.submit(functools.partial(_remove_container, container_id, patience=ENGINE_PATIENCE_S))

    def _done(self, future: Future[Any]) -> None:
        with self._lock:
            self._pending.discard(future)

    def join(self) -> None:
        """Wait until every submitted removal finished (each retries for at most ``ENGINE_PATIENCE_S``)."""
        with self._lock:
            pending = list(self._pending)
        wait(pending)
        for future in pending:
            if future.exception() is not None:
                log.error("removing an agent container failed: %s", future.exception())


_POOLS: dict[tuple[int, str, ReusePolicy], WarmPool] = {}
_POOLS_LOCK = threading.Lock()
_POOL_REMOVER: dict[int, Remover] = {}


def warm_pool(policy: ReusePolicy, base: Path) -> WarmPool:
    """This process's pool of warm containers for ``policy`` under the runtime folder ``base`` (pools
    are per process: a forked worker starts with none)."""
    key = (os.getpid(), str(base), policy)
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            remover = _POOL_REMOVER.setdefault(os.getpid(), Remover())
            pool = _POOLS[key] = WarmPool(policy, new_pool_root(base, RUNTIME_PREFIX), remover.remove)
        return pool


@atexit.register
def close_warm_pools() -> None:
    """Remove every idle warm container of this process and wait for the removals (runs after
    ``_kill_live_agents``: atexit calls run last-registered first)."""
    with _POOLS_LOCK:
        pools = [pool for key, pool in _POOLS.items() if key[0] == os.getpid()]
        for key in [key for key in _POOLS if key[0] == os.getpid()]:
            del _POOLS[key]
        remover = _POOL_REMOVER.pop(os.getpid(), None)
    for pool in pools:
        pool.close()
        shutil.rmtree(pool.root, ignore_errors=True)
    if remover is not None:
        remover.join()


_LIVE: weakref.WeakSet[DockerAgentProcess] = weakref.WeakSet()


@atexit.register
def _kill_live_agents() -> None:
    """On interpreter exit, remove every agent container this process still holds (a SIGKILLed runner
    leaves them to ``reap_orphans``)."""
    for proc in list(_LIVE):
        with contextlib.suppress(Exception):
            proc.kill()


def _container_data_root(pid: int, container_id: str = "") -> str:
    """The data tmpfs of the container whose process ``pid`` (as this process sees it) is; with
    ``container_id``, ``pid`` is the engine's (``State.Pid``, a host pid), checked to be that container's
    here (a referee in another pid namespace would find some other process under that number)."""
    if pid and container_id:
        try:
            visible = container_id in Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:
            visible = False
        pid = pid if visible else 0
    if not pid:
        raise SandboxError(
            "the agent container's processes are not visible here, so its data folder cannot be filled: "
            "run the worker in the host's pid namespace with CAP_SYS_PTRACE (as docker-compose.yml does)"
        )
    return f"/proc/{pid}/root{DATA_DIR_IN_SANDBOX}"


def _fill_container_data(spec: LaunchSpec, root: str) -> None:
    """Write ``spec.data``'s archive into a container's (empty) data folder, owned by the agent's uid."""
    archive = spec.data.archive if spec.data is not None else b""
    if not archive:
        return
    try:
        fill_folder(archive, root, spec.limits.data_mb * MB, uid=AGENT_UID)
    except DataError as exc:  # the archive's own content: the agent's (Seat.refuse_data)
        raise AgentDataRefused(str(exc), spec) from exc
    except OSError as exc:
        raise SandboxError(f"could not fill the agent's data folder: {exc}") from exc


def _bind_anonymously(listener: socket.socket, path: str) -> None:
    """Bind ``listener`` at ``path`` through a descriptor of its folder. The kernel records the address a
    socket was bound with and gives it to every connection accepted on it, which lives in the
    *connecting* process's network namespace: bound by its real path, the agent's container would read
    the referee's folder (its runtime folder, its pid) in ``/proc/net/unix`` and from ``getpeername``.
    This way they read ``/proc/self/fd/<n>/agent.sock``, which names nothing of the host."""
    folder = os.open(os.path.dirname(path), os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        listener.bind(f"/proc/self/fd/{folder}/{os.path.basename(path)}")
    finally:
        os.close(folder)


def _share_with_agent(socket_dir: str, path: str) -> None:
    """Let uid 10001 (and nobody else) reach the socket.

    As root: the folder is root:10001 mode 0710 and the socket 10001:10001 mode 0600. As another user
    (chown not allowed): folder 0711 and socket 0666 — still unreachable for other host users, because the
    runtime folder above is 0700 and only the container sees this folder (as its mount root).
    """
    try:
        os.chown(socket_dir, 0, AGENT_UID)
        os.chown(path, AGENT_UID, AGENT_UID)
    except PermissionError:
        os.chmod(socket_dir, 0o711)  # noqa: S103 - see the docstring
        os.chmod(path, 0o666)  # noqa: S103 - see the docstring
        return
    os.chmod(socket_dir, 0o710)  # noqa: S103 - group-only
    os.chmod(path, 0o600)


#: image -> its agent folder when its entrypoint is our Python harness, else None (``_harness_agent_dir``).
_HARNESS_DIRS: dict[str, str | None] = {}


class DockerSandbox(Sandbox):
    """Runs each agent in a fresh container of its image (see the module docstring)."""

    name = "docker"
    isolation = (
        "Docker container: uid 10001, no network, read-only root with a small noexec /tmp, all capabilities "
        "dropped, no-new-privileges, pids/memory/CPU/ulimit caps; shares the host kernel"
    )

    def __init__(
        self,
        *,
        runtime_dir: str | Path | None = None,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        images: ImageCache | None = None,
        reuse: ReusePolicy | None = None,
    ) -> None:
        """``runtime_dir`` is where per-launch socket folders go (default ``$AGENT_RUNTIME_DIR``, else the
        system temp folder). When the referee itself runs in a container talking to the host's engine,
        this folder must exist at the same path in that container and on the host (bind mounts are
        resolved by the engine, on the host). ``images`` fetches and caches agent images (default: the
        registry and cache budget of the environment, ``run_duel.images``). ``reuse`` says whether
        agents run in warm containers kept between duels (``docker_warm``; default off: the platform turns
        it on with its ``DUEL_SANDBOX_REUSE*`` settings, ``duel_runner.tasks.duel_sandbox``)."""
        base = _runtime_base(runtime_dir)
        self.reuse = reuse if reuse is not None else ReusePolicy()
        self.pool = warm_pool(self.reuse, base) if self.reuse.enabled else None
        try:
            self._api = get_client().api
            if self.pool is None or not self.pool.idle():  # else the engine answered this process lately
                self._api.ping()
        except ENGINE_FAILURES as exc:
            raise SandboxError(f"no Docker engine answers ({exc}); run scripts/ensure_docker.sh") from exc
        base.mkdir(parents=True, exist_ok=True)
        self._images = images if images is not None else ImageCache.from_env()
        self._root = tempfile.mkdtemp(prefix=f"{RUNTIME_PREFIX}{os.getpid()}-", dir=base)
        self.connect_timeout = connect_timeout
        self._processes: weakref.WeakSet[DockerAgentProcess] = weakref.WeakSet()
        self._remover = Remover()

    def launch(self, spec: LaunchSpec) -> DockerAgentProcess:
        """Start agent ``spec.agent`` (an image); return once its harness connected. With reuse on, in a
        warm container of that image when its entrypoint is our Python harness, else in a fresh one."""
        agent_dir = self._harness_agent_dir(spec.agent)
        if self.pool is not None and agent_dir is not None:
            return self._launch_warm(spec, agent_dir)
        socket_dir = tempfile.mkdtemp(prefix="launch-", dir=self._root)
        container_id, conn, data_root = self._start(spec, socket_dir, agent_dir=agent_dir)
        fd = conn.detach()
        proc = DockerAgentProcess(container_id, Channel(fd, fd), socket_dir, spec.limits)
        proc._data_root = data_root
        proc.attach_cgroup(_peer_pid(fd))
        self._processes.add(proc)
        _LIVE.add(proc)
        return proc

    # -- warm containers (docker_warm) ---------------------------------------------------------------

    def _harness_agent_dir(self, image: str) -> str | None:
        """The agent folder of ``image`` if its entrypoint is our Python harness (cached per process: an
        image reference names one content, by digest on the platform, by content hash from our builder):
        such a container runs this checkout's harness, isolated (``container_config``), and can run warm."""
        cache = _HARNESS_DIRS
        if image not in cache:
            with self._images.use(image):  # fetched by digest if this engine lacks it
                try:
                    entrypoint = self._api.inspect_image(image)["Config"].get("Entrypoint")
                except ImageNotFound as exc:
                    raise ImageUnavailable(f"agent image {image} vanished from the engine") from exc
                except ENGINE_FAILURES as exc:
                    raise EngineError(f"inspecting the agent image failed: {exc}") from exc
            cache[image] = warm_capable(entrypoint)
        return cache[image]

    def _launch_warm(self, spec: LaunchSpec, agent_dir: str) -> WarmAgentProcess:
        """A fresh agent process in an idle warm container of this image and these limits (a new one
        when none is idle, or when the idle one fails to spawn)."""
        assert self.pool is not None
        key = warm_key(spec)
        container = self.pool.take(key)
        if container is not None:
            try:
                return self._spawn(container, spec)
            except WarmError as exc:
                log.warning("warm container %s retired: %s", container.container_id[:12], exc)
                self.pool.give_back(container, reusable=False)
            except AgentDataRefused:  # its forked process never ran: retire the container
                self.pool.give_back(container, reusable=False)
                raise
        container = self._new_warm(spec, agent_dir, key)
        try:
            return self._spawn(container, spec)
        except (WarmError, AgentDataRefused):
            self.pool.give_back(container, reusable=False)
            raise

    def _new_warm(self, spec: LaunchSpec, agent_dir: str, key: WarmKey) -> WarmContainer:
        """Start a warm container; return once its factory imported numpy and said ``warm``."""
        assert self.pool is not None
        socket_dir = tempfile.mkdtemp(prefix="warm-", dir=self.pool.root)
        container_id, conn, _ = self._start(spec, socket_dir, agent_dir=agent_dir, warm=True)
        container = WarmContainer(container_id, conn, socket_dir, key)
        self.pool.created += 1
        try:
            conn.settimeout(self.connect_timeout)
            hello = json.loads(conn.recv(256) or b"{}")
        except (OSError, ValueError) as exc:
            hello = {"error": str(exc)}
        if hello.get("type") != "warm":
            with contextlib.suppress(*ENGINE_FAILURES):
                hello["log"] = self._api.logs(container_id, tail=20).decode("utf-8", "replace")[-2000:]
            self.pool.retire(container)
            raise SandboxError(f"the warm container's factory did not start: {hello}")
        container.factory_pid = _peer_pid(conn.fileno())
        return container

    def _spawn(self, container: WarmContainer, spec: LaunchSpec) -> WarmAgentProcess:
        """Have the factory fork the duel's agent process, on a new socketpair and stderr pipe."""
        assert self.pool is not None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        err_r, err_w = os.pipe()
        env = {**BASE_ENV, **spec.harness_env()}
        if spec.limits.data_mb > 0:
            env[DATA_DIR_ENV] = DATA_DIR_IN_SANDBOX
        try:
            container.request({"type": "spawn", "env": env}, fds=[theirs.fileno(), err_w])
        except WarmError:
            ours.close()
            os.close(err_r)
            raise
        finally:
            theirs.close()
            os.close(err_w)
        from run_duel.sandbox.local import _TailReader  # only warm seats need it; cold ones read logs

        stderr = _TailReader(err_r, spec.limits.log_bytes)
        stderr.start()
        data_root = _container_data_root(container.factory_pid) if spec.limits.data_mb > 0 else None
        try:
            freezer, agent_pid = _agent_freezer(container)
            if data_root is not None:  # the factory emptied the folder after the previous duel
                _fill_container_data(spec, data_root)
            ours.sendall(b"\n")  # the agent process waited for this before running anything else
        except AgentDataRefused:
            stderr.stop()
            ours.close()
            raise
        except (WarmError, OSError, SandboxError) as exc:
            stderr.stop()
            ours.close()
            raise WarmError(f"placing the agent process failed: {exc}") from exc
        fd = ours.detach()
        proc = WarmAgentProcess(container, self.pool, WarmChannel(fd, fd), stderr, spec.limits)
        proc._data_root = data_root
        proc.attach_warm(container.factory_pid, freezer, agent_pid)
        self._processes.add(proc)
        _LIVE.add(proc)
        return proc

    # -- containers ----------------------------------------------------------------------------------

    def _start(
        self, spec: LaunchSpec, socket_dir: str, *, agent_dir: str | None = None, warm: bool = False
    ) -> tuple[str, socket.socket, str | None]:
        """Create and start a container of ``spec.agent`` whose harness connects to a socket in
        ``socket_dir``; return its id, the connection and (a cold container with a data folder) the data
        folder's path as we reach it. On failure nothing is left (container removed in the background,
        folder deleted). ``agent_dir``: the image runs our Python harness, mounted (``container_config``);
        ``warm``: as a warm container's factory.

        A cold container's data folder is filled before its harness can connect (the socket only gets
        its name then; the harness, or our C++ image's launcher, waits until it does), so before any code
        of the agent runs."""
        container_id: str | None = None
        listener: socket.socket | None = None
        kind = socket.SOCK_SEQPACKET if warm else socket.SOCK_STREAM
        fill = not warm and spec.limits.data_mb > 0
        data_root = None
        try:
            path = os.path.join(socket_dir, SOCKET_NAME)
            bound = os.path.join(socket_dir, ".pending.sock") if fill else path
            listener = socket.socket(socket.AF_UNIX, kind | socket.SOCK_CLOEXEC)
            _bind_anonymously(listener, bound)
            _share_with_agent(socket_dir, bound)
            listener.listen(1)
            if agent_dir is not None:
                harness = os.path.join(socket_dir, HARNESS_NAME)
                shutil.copyfile(HARNESS_FILE, harness)
                os.chmod(harness, 0o644)
            config = container_config(spec.agent, spec, socket_dir, agent_dir=agent_dir, warm=warm)
            # The image is fetched if this engine lacks it, and kept until the container exists.
            with self._images.use(spec.agent):
                try:
                    container_id = self._api.create_container(**config)["Id"]
                except ImageNotFound as exc:
                    raise ImageUnavailable(f"agent image {spec.agent} vanished from the engine") from exc
            self._api.start(container_id)
            if fill:
                pid = self._api.inspect_container(container_id)["State"]["Pid"]
                data_root = _container_data_root(pid, container_id)
                _fill_container_data(spec, data_root)
                os.rename(bound, path)
            conn = self._accept(listener, container_id)
        except BaseException as exc:
            if listener is not None:
                listener.close()
            if container_id is not None:
                self._remover.remove(container_id)
            shutil.rmtree(socket_dir, ignore_errors=True)
            if isinstance(exc, SandboxError | KeyboardInterrupt | SystemExit):
                raise
            if isinstance(exc, ENGINE_FAILURES):
                raise EngineError(f"starting the agent container failed: {exc}") from exc
            raise
        listener.close()
        os.unlink(path)
        return container_id, conn, data_root

    def launch_many(self, specs: list[LaunchSpec]) -> list[DockerAgentProcess]:
        """Launch several agents concurrently (container start-up dominates a launch); all or nothing.
        When every seat has an idle warm container, one after the other (a fork takes milliseconds)."""
        if len(specs) <= 1 or (self.pool is not None and self.pool.can_serve([warm_key(s) for s in specs])):
            launched: list[DockerAgentProcess] = []
            try:
                for spec in specs:
                    launched.append(self.launch(spec))
            except BaseException:
                for proc in launched:
                    proc.kill()
                raise
            return launched
        with ThreadPoolExecutor(max_workers=len(specs), thread_name_prefix="docker-launch") as pool:
            futures = [pool.submit(self.launch, spec) for spec in specs]
            wait(futures)
        launched = [f.result() for f in futures if f.exception() is None]
        failures = [f.exception() for f in futures if f.exception() is not None]
        if failures:
            for proc in launched:
                proc.kill()
            # A refused data folder first: the referee charges that seat and starts the others alone.
            failures.sort(key=lambda exc: not isinstance(exc, AgentDataRefused))
            raise failures[0]
        return launched

    def kill_many(self, procs: list[DockerAgentProcess]) -> None:
        """Kill several agents concurrently (removing a container is an engine round trip of 10-100 ms)."""
        if all(isinstance(proc, WarmAgentProcess) for proc in procs):
            for proc in procs:  # a factory's clean-up takes about a millisecond: no threads needed
                proc.kill()
            return
        _each_concurrently(lambda proc: proc.kill(), procs, "docker-kill")

    def pin_many(self, procs: list[DockerAgentProcess], cpus: frozenset[int]) -> list[bool]:
        """Pin several agents concurrently (``DockerAgentProcess.pin_cpus``, one engine call each)."""
        if all(isinstance(proc, WarmAgentProcess) for proc in procs):
            return [proc.pin_cpus(cpus) for proc in procs]  # no engine call: the factory sets affinities
        return _each_concurrently(lambda proc: proc.pin_cpus(cpus), procs, "docker-pin")

    def _accept(self, listener: socket.socket, container_id: str) -> socket.socket:
        """Wait for the harness to connect; fail early if the container exits first."""
        deadline = time.monotonic() + self.connect_timeout
        listener.settimeout(0.25)
        while True:
            try:
                conn, _ = listener.accept()
                conn.setblocking(True)
                return conn
            except TimeoutError:
                pass
            state = self._api.inspect_container(container_id)["State"]
            info = _exit_info(state)
            if info is not None:
                logs = self._api.logs(container_id, tail=20).decode("utf-8", "replace")
                raise SandboxError(
                    f"the agent container exited (code {info.returncode}) before connecting: {logs[-2000:]}"
                )
            if time.monotonic() >= deadline:
                raise SandboxError(f"the agent container did not connect within {self.connect_timeout:g} s")

    def close(self) -> None:
        """Kill every agent this sandbox launched that is still alive, wait until every container is
        removed (retrying while the engine restarts), then remove the runtime folder."""
        for proc in list(self._processes):
            proc.kill()
        self._remover.join()
        shutil.rmtree(self._root, ignore_errors=True)


def _each_concurrently(call: Callable[[Any], Any], items: list[Any], name: str) -> list[Any]:
    """``[call(item) for item in items]``, one thread per item when there are several (each call is an
    engine round trip); the first exception is raised once every call has ended."""
    if len(items) <= 1:
        return [call(item) for item in items]
    with ThreadPoolExecutor(max_workers=len(items), thread_name_prefix=name) as pool:
        return list(pool.map(call, items))


def _owner_alive(labels: dict[str, str]) -> bool:
    if labels.get(f"{LABEL}.owner-host") != _HOSTNAME:
        return True  # another machine's container: only age can tell
    try:
        pid = int(labels.get(f"{LABEL}.owner-pid", ""))
    except ValueError:
        return False
    start = _proc_start_time(pid)
    return bool(start) and start == labels.get(f"{LABEL}.owner-start", start)


def _socket_folder_gone(summary: dict[str, Any], base: Path) -> bool:
    """Whether the container's socket folder, under this host's runtime folder, was deleted: its owner
    killed it (``kill`` always deletes the folder) but the engine, dead at the time, could not remove it."""
    for mount in summary.get("Mounts") or []:
        if mount.get("Destination") == SOCKET_DIR_IN_CONTAINER:
            source = Path(mount.get("Source") or "")
            return base in source.parents and not source.exists()
    return False


def reap_orphans(max_age_s: float = 6 * 3600, *, client: docker.DockerClient | None = None) -> list[str]:
    """Remove rl-arena agent containers whose owner process is gone (on this host), whose owner already
    killed them while the engine was down (their socket folder is gone), or older than ``max_age_s``,
    thawed first and in bounded rounds (``run_duel.sandbox.orphans``); also delete socket folders of dead
    owners. Returns the ids of the containers really removed."""
    from run_duel.sandbox.orphans import reap_orphans as reap

    return reap(max_age_s)


_SKIPPED_PARTS = {"__pycache__", ".git", ".venv", ".mypy_cache", ".pytest_cache"}


def _zip_folder(folder: Path, dest: Path) -> Path:
    """Zip a submission folder, leaving out caches and VCS folders (they would change the content hash)."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
        for item in sorted(folder.rglob("*")):
            relative = item.relative_to(folder)
            if _SKIPPED_PARTS & set(relative.parts) or item.suffix == ".pyc" or not item.is_file():
                continue
            if item.is_symlink():
                continue  # the builder refuses links; a folder on disk may hold some
            archive.write(item, relative.as_posix())
    return dest


def resolve_docker_agent(ref: str, *, work_dir: Path | None = None) -> str:
    """Turn a CLI agent reference into an image name.

    ``ref`` may be an image name (``repo@sha256:...`` included), a submission zip, or a folder holding
    ``player.py`` (zipped and built on the fly with ``builder``). Raises ``SandboxError`` with the build
    error when the build fails.
    """
    path = Path(ref)
    if not path.exists():
        if parse_digest_ref(ref):
            return ref  # a registry image: the sandbox pulls it at launch if this engine lacks it
        try:
            get_client().api.inspect_image(ref)
        except ImageNotFound as exc:
            raise SandboxError(f"{ref!r} is neither an image, a zip nor a folder with player.py") from exc
        return ref
    from builder import build_submission  # the builder imports run_duel: import late

    work = Path(work_dir) if work_dir else Path(tempfile.gettempdir()) / "rl-arena-builds"
    if path.is_dir():
        if not has_agent_entry(path):
            raise SandboxError(f"{ref}: the folder has no player.py (or Kaggle-style main.py)")
        with tempfile.TemporaryDirectory() as tmp:
            archive = _zip_folder(path, Path(tmp) / "submission.zip")
            result = build_submission(archive, backend="docker", work_dir=work)
    else:
        result = build_submission(path, backend="docker", work_dir=work)
    if not result.ok:
        raise SandboxError(f"building {ref} failed ({result.error_kind}): {result.error}")
    return result.agent_ref


def image_for_path(ref: str) -> str:
    """The ``run_duel.cli.resolve_agent`` hook: build a folder or zip into an image, return its name."""
    return resolve_docker_agent(ref)
