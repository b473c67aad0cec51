"""One local agent process (``LocalAgentProcess``): its exit, stderr, CPU placement, freezing and kill."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from run_duel.agent_data import MB
from run_duel.channel import Channel
from run_duel.sandbox import cgroups
from run_duel.sandbox.base import AgentProcess, ExitInfo, Limits, SandboxError
from run_duel.sandbox.local_bwrap import BwrapDataFolder
from run_duel.sandbox.local_cgroup import SeatCgroup
from run_duel.sandbox.tail_reader import TailReader

#: A SIGKILL we did not send, with peak RSS at or above this fraction of the limit, is read as MEMORY_LIMIT.
OOM_RSS_FRACTION = 0.9
#: How long to wait for the last stderr bytes of an ended process (a surviving child may hold the pipe).
STDERR_DRAIN_S = 0.2


class LocalAgentProcess(AgentProcess):
    """One agent subprocess (maybe inside bubblewrap) and its pipes, temp folder and cgroup."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        channel: Channel,
        stderr: TailReader,
        workdir: str | None,
        cgroup: SeatCgroup | None,
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
        self._bwrap_data: BwrapDataFolder | None = None

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
