"""Worker processes on this machine: ``celery -A core worker`` started and stopped by the autoscaler.

Each worker is a process group started with its own session; ``<run_dir>/<name>.pid`` holds its pid and
``<run_dir>/<name>.draining`` marks a drained one. Draining sends SIGTERM: Celery's warm shutdown stops
consuming, finishes the running tasks and exits. Destroying cleans up (and SIGKILLs a straggler).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from autoscaler.policy import WorkerView

DEFAULT_COMMAND = (sys.executable, "-m", "celery", "-A", "core", "worker", "--loglevel", "INFO")


def _process_state(pid: int) -> str | None:
    """The one-letter state of ``pid`` from /proc (None if it does not exist)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def _parent_pid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


class LocalProvider:
    """Celery worker processes on this machine, named ``<prefix>-<n>``."""

    def __init__(
        self,
        run_dir: Path,
        *,
        command: Sequence[str] = DEFAULT_COMMAND,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        prefix: str = "autoscaled",
    ) -> None:
        self.run_dir = Path(run_dir)
        self.command = list(command)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.prefix = prefix
        self.hostname = socket.gethostname()
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self.run_dir.mkdir(parents=True, exist_ok=True)

    # --- helpers -----------------------------------------------------------------------------------------
    def _pid_file(self, name: str) -> Path:
        return self.run_dir / f"{name}.pid"

    def _marker(self, name: str) -> Path:
        return self.run_dir / f"{name}.draining"

    def _pid(self, name: str) -> int | None:
        try:
            return int(self._pid_file(name).read_text().strip())
        except (OSError, ValueError):
            return None

    def _alive(self, pid: int) -> bool:
        child = self._children.get(pid)
        if child is not None and child.poll() is not None:
            return False
        return _process_state(pid) not in (None, "Z", "X")

    def _owns(self, worker_pid: int, claimer: str) -> bool:
        host, _, pid_text = claimer.rpartition(":")
        if host != self.hostname or not pid_text.isdigit():
            return False
        pid = int(pid_text)
        return pid == worker_pid or _parent_pid(pid) == worker_pid

    def is_running(self, name: str) -> bool:
        """Whether the worker's main process is alive (not exited, not a zombie)."""
        pid = self._pid(name)
        return pid is not None and self._alive(pid)

    def names(self) -> list[str]:
        """Names of the workers this provider has pid files for."""
        return sorted(p.stem for p in self.run_dir.glob(f"{self.prefix}-*.pid"))

    # --- Provider ----------------------------------------------------------------------------------------
    def list_workers(self, busy_claimers: frozenset[str] = frozenset()) -> list[WorkerView]:
        """Live workers, plus drained ones that exited (reported idle, so they get destroyed)."""
        views = []
        now = time.time()
        for name in self.names():
            pid = self._pid(name)
            draining = self._marker(name).exists()
            alive = pid is not None and self._alive(pid)
            if not alive and not draining:
                self.destroy(name)  # crashed or killed from outside: forget it
                continue
            busy = alive and pid is not None and any(self._owns(pid, c) for c in busy_claimers)
            age = now - self._pid_file(name).stat().st_mtime
            views.append(
                WorkerView(name=name, state="draining" if draining else "running", busy=busy, age_s=age)
            )
        return views

    def start(self, count: int) -> list[str]:
        """Start ``count`` workers (``--hostname <name>@<host>``), each in its own session."""
        taken = {int(n.rsplit("-", 1)[1]) for n in self.names() if n.rsplit("-", 1)[1].isdigit()}
        started = []
        index = 1
        for _ in range(count):
            while index in taken:
                index += 1
            taken.add(index)
            name = f"{self.prefix}-{index}"
            log = (self.run_dir / f"{name}.log").open("ab")
            proc = subprocess.Popen(
                [*self.command, "--hostname", f"{name}@%h"],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
            )
            log.close()
            self._children[proc.pid] = proc
            self._pid_file(name).write_text(f"{proc.pid}\n")
            started.append(name)
        return started

    def drain(self, name: str) -> None:
        """SIGTERM: Celery stops consuming, finishes its tasks, exits."""
        self._marker(name).touch()
        pid = self._pid(name)
        if pid is not None and self._alive(pid):
            os.kill(pid, signal.SIGTERM)

    def destroy(self, name: str) -> None:
        """Kill whatever is left of the worker's process group and forget it."""
        pid = self._pid(name)
        if pid is not None and self._alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        if pid is not None and pid in self._children:
            self._children.pop(pid).wait(timeout=10)
        self._pid_file(name).unlink(missing_ok=True)
        self._marker(name).unlink(missing_ok=True)
