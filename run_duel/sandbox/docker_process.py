"""An agent's container as the referee drives it: ``DockerAgentProcess`` (a cold container, one seat) and
``WarmAgentProcess`` (one duel's agent process in a warm container, ``docker_warm``).

The agent's stderr is read through the Docker logs API, capped to ``Limits.log_bytes`` (tail). ``kill``
removes the container by id (force), whatever happened, and deletes the socket folder; while the engine
does not answer (a restart) it retries for up to ``ENGINE_PATIENCE_S``. When the engine does not answer,
or a container vanished or was killed through the engine's API (the engine shutting down, an operator, a
reaper), ``poll_exit``/``wait_exit`` raise ``EngineError`` (a ``SandboxError``) instead of reporting an
exit the referee would charge to the agent.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import struct
import threading
import time
import weakref
from typing import Any

from docker.errors import NotFound

from run_duel.channel import Channel
from run_duel.sandbox import cgroups
from run_duel.sandbox.base import AgentProcess, ExitInfo, Limits
from run_duel.sandbox.docker_client import get_client
from run_duel.sandbox.docker_engine import (
    ENGINE_FAILURES,
    ENGINE_PATIENCE_S,
    EngineError,
    exit_info,
    remove_container,
)
from run_duel.sandbox.docker_warm import (
    CONTROL_TIMEOUT_S,
    WarmChannel,
    WarmContainer,
    WarmError,
    WarmPool,
)
from run_duel.sandbox.docker_warm import exit_info as factory_exit_info
from run_duel.sandbox.tail_reader import TailReader

log = logging.getLogger(__name__)

#: The agent processes of this process whose containers are alive (``kill_live_agents`` at exit).
LIVE: weakref.WeakSet[DockerAgentProcess] = weakref.WeakSet()


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
        info = exit_info(state)
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
                    self._exit = exit_info(state) if state else None
        finally:
            remove_container(self.container_id, patience=ENGINE_PATIENCE_S)
            shutil.rmtree(self.socket_dir, ignore_errors=True)
            LIVE.discard(self)


class WarmAgentProcess(DockerAgentProcess):
    """One duel's agent process in a warm container (``docker_warm``): exit, pinning and clean-up go
    through the container's factory, stderr through a pipe; freezing is the container's cgroup's, as for
    a cold container (one seat per container)."""

    def __init__(
        self,
        container: WarmContainer,
        pool: WarmPool,
        channel: WarmChannel,
        stderr: TailReader,
        limits: Limits,
    ) -> None:
        super().__init__(container.container_id, channel, container.socket_dir, limits)
        self.container = container
        self._pool = pool
        self._stderr = stderr

    def attach_warm(self, factory_pid: int, freezer: cgroups.Freezer | None, agent_pid: int = 0) -> None:
        """The container's memory cgroup and the freezer of the agent's own sub-cgroup
        (``agent_freezer``): freezing the seat freezes the agent's processes, never the factory. The
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
            info = factory_exit_info(self.container.request({"type": "poll"}))
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
        self._exit = factory_exit_info(reply)
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
                self._exit = factory_exit_info(reply)
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
            LIVE.discard(self)


def kill_live_agents() -> None:
    """Remove every agent container this process still holds (at interpreter exit, ``docker_pools``; a
    SIGKILLed runner leaves them to ``reap_orphans``)."""
    for proc in list(LIVE):
        with contextlib.suppress(Exception):
            proc.kill()


#: The sub-cgroup (of the warm container's freezer cgroup) holding the duel's agent processes.
AGENT_SUBGROUP = "agent"


def agent_freezer(container: WarmContainer) -> tuple[cgroups.Freezer | None, int]:
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


def peer_pid(fd: int) -> int:
    """The pid of the process at the other end of a connected Unix socket (0 if not visible here)."""
    with contextlib.suppress(OSError):
        sock = socket.socket(fileno=os.dup(fd))
        with sock:
            raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", raw)[0]
    return 0
