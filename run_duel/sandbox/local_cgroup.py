"""The cgroups of one local agent (``SeatCgroup``): its fork cap, memory limit, freezer and CPU counter."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
import uuid
from pathlib import Path

from run_duel.agent_data import MB
from run_duel.sandbox import cgroups
from run_duel.sandbox.base import Limits

log = logging.getLogger(__name__)

#: Empty per-agent cgroups older than this are leftovers of a referee that was killed: removed.
STALE_CGROUP_AGE_S = 600
PIDS_CGROUP_ROOT = Path("/sys/fs/cgroup/pids")
CGROUP_PREFIX = "arena-"


class SeatCgroup:
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
    def create(cls, limits: Limits) -> SeatCgroup | None:
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
        for parent in SeatCgroup.parents().values():
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
