"""The kernel's control groups, as the sandboxes use them for one seat: freeze, memory, pids.

Two layouts exist: cgroup v1 (one hierarchy per controller: ``freezer``, ``memory``, ``pids`` mounted
under ``/sys/fs/cgroup/<name>``) and cgroup v2 (one unified hierarchy, ``cgroup.freeze`` built in). A
*seat* is a set of cgroups holding every process of one agent; membership is inherited by every child
and cannot be left by ``setsid``, ``fork`` or ``daemon()``, which is what makes freezing and OOM
accounting hold against a hostile agent.

* ``Freezer``: ``freeze()`` / ``thaw()`` write one byte string to an already open cgroup file (a few µs):
  a frozen cgroup's tasks get no CPU at all until thawed. v1 caveat: a frozen task does not die of
  SIGKILL until thawed, so whoever kills an agent thaws it right after (``Freezer.thaw`` is idempotent).
* ``MemoryWatch``: whether the kernel OOM-killed a process of the group, and whether its usage ever
  reached the limit (v1 ``memory.oom_control`` / ``memory.failcnt``, v2 ``memory.events``).
* ``cgroup_dirs_of(pid)``: where an existing process (e.g. a container's init) sits, per controller;
  ``container_dirs(id)``: where a Docker container's cgroups are, from its id.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from run_duel.settings import run_duel_settings

V2 = "unified"
#: ``MemoryWatch.exhausted(grace)`` watches a group only when it uses at least this share of its limit.
GRACE_FROM_FRACTION = 0.25


#: A hierarchy mounted elsewhere than ``/proc/self/mountinfo`` says: a worker in a container may get the
#: host's cgroup file system bind-mounted there (v1: one folder per controller below it; v2: the root).
ROOT_ENV = "AGENT_CGROUP_ROOT"
_CONTROLLERS = ("freezer", "memory", "pids", "cpuacct")


@cache
def mounts() -> dict[str, Path]:
    """Mount point of each cgroup hierarchy: ``{"freezer": ..., "memory": ..., "pids": ..., "unified":
    ...}`` (v1 controllers by name, the v2 hierarchy as ``"unified"``): below ``$AGENT_CGROUP_ROOT`` when
    set (a worker container's own ``/sys/fs/cgroup`` shows only its own group), else where
    ``/proc/self/mountinfo`` says."""
    override = run_duel_settings().cgroup_root
    if override:
        root = Path(override)
        if (root / "cgroup.controllers").exists():
            return {V2: root}
        return {key: root / key for key in _CONTROLLERS if (root / key).is_dir()}
    found: dict[str, Path] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, extra = left.split(), right.split()
        if len(fields) < 5 or len(extra) < 3:
            continue
        if extra[0] == "cgroup2":
            found.setdefault(V2, Path(fields[4]))
        elif extra[0] == "cgroup":
            for option in extra[2].split(","):
                if option in _CONTROLLERS:
                    found.setdefault(option, Path(fields[4]))
    return found


def cgroup_dirs_of(pid: int) -> dict[str, Path]:
    """The cgroup folders of process ``pid`` for ``freezer``, ``memory``, ``pids`` (v1) and ``unified``
    (v2), as seen from this process; empty when ``pid`` is not visible here."""
    known = mounts()
    dirs: dict[str, Path] = {}
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return dirs
    for line in lines:
        _, controllers, path = line.split(":", 2)
        names = [V2] if controllers == "" else controllers.split(",")
        for name in names:
            if name in known and path not in ("", "/"):  # never the root group: that is everyone
                dirs[name] = known[name] / path.lstrip("/")
    return dirs


#: Where Docker puts a container's cgroup under a hierarchy, by cgroup driver (``{id}``: its full id).
CONTAINER_LAYOUTS = ("docker/{id}", "system.slice/docker-{id}.scope")


def container_dirs(container_id: str) -> dict[str, Path]:
    """The cgroup folders of a Docker container found from its id (when its processes are not visible
    from here, e.g. from a referee in another pid namespace), by the engine's default layouts, under
    ``$AGENT_CGROUP_ROOT`` when set, else where the hierarchies are mounted. Empty when none exists."""
    dirs: dict[str, Path] = {}
    for key, base in mounts().items():
        for layout in CONTAINER_LAYOUTS:
            candidate = base / layout.format(id=container_id)
            if candidate.is_dir():
                dirs[key] = candidate
                break
    return dirs


class Freezer:
    """Freezes and thaws one cgroup (v1 ``freezer.state`` or v2 ``cgroup.freeze``) through an open file."""

    def __init__(self, directory: Path, *, v2: bool) -> None:
        self.directory = directory
        self.v2 = v2
        name, self._on, self._off = (
            ("cgroup.freeze", b"1", b"0") if v2 else ("freezer.state", b"FROZEN", b"THAWED")
        )
        self._fd = os.open(directory / name, os.O_WRONLY | os.O_CLOEXEC)
        self.frozen = False

    @classmethod
    def for_dirs(cls, dirs: dict[str, Path]) -> Freezer | None:
        """A freezer for the seat whose cgroup folders are ``dirs`` (v1 ``freezer`` first), or ``None``."""
        for key, v2 in (("freezer", False), (V2, True)):
            directory = dirs.get(key)
            if directory is not None:
                try:
                    return cls(directory, v2=v2)
                except OSError:
                    continue
        return None

    def freeze(self) -> None:
        """Stop every task of the group (asynchronous: each task stops at its next return to user mode,
        microseconds for a running one). Idempotent."""
        if not self.frozen:
            os.pwrite(self._fd, self._on, 0)
            self.frozen = True

    def thaw(self) -> None:
        """Let the group run again. Idempotent; harmless on a group whose tasks are gone."""
        if self.frozen:
            try:  # noqa: SIM105 - not contextlib.suppress: this runs at every move
                os.pwrite(self._fd, self._off, 0)
            except OSError:  # the group was removed: nothing left to thaw
                pass
            self.frozen = False

    def is_frozen(self) -> bool:
        """What the kernel says (v1: ``FROZEN``/``FREEZING`` count as frozen; v2: ``cgroup.events``)."""
        try:
            if self.v2:
                events = (self.directory / "cgroup.events").read_text()
                return "frozen 1" in events or (self.directory / "cgroup.freeze").read_text().strip() == "1"
            return (self.directory / "freezer.state").read_text().strip() in ("FROZEN", "FREEZING")
        except OSError:
            return False

    def close(self) -> None:
        """Thaw (a frozen v1 task cannot die) and close the file (idempotent)."""
        self.thaw()
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1


class CpuUsage:
    """CPU seconds used so far by every task of one cgroup (v1 ``cpuacct.usage``, v2 ``cpu.stat``'s
    ``usage_usec``), read through an open file (about a microsecond)."""

    def __init__(self, path: Path, *, v2: bool) -> None:
        self.v2 = v2
        self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    @classmethod
    def for_dirs(cls, dirs: dict[str, Path]) -> CpuUsage | None:
        for key, name, v2 in (("cpuacct", "cpuacct.usage", False), (V2, "cpu.stat", True)):
            directory = dirs.get(key)
            if directory is not None:
                try:
                    return cls(directory / name, v2=v2)
                except OSError:
                    continue
        return None

    def seconds(self) -> float | None:
        """CPU seconds so far; ``None`` when the group is gone."""
        return self.parse(self.raw())

    def raw(self) -> bytes | None:
        """The counter's file as read now (``parse`` makes it seconds); ``None`` when the group is gone."""
        try:
            return os.pread(self._fd, 4096, 0)
        except OSError:
            return None

    def parse(self, data: bytes | None) -> float | None:
        """CPU seconds of a ``raw`` reading; ``None`` for a missing one."""
        if data is None:
            return None
        if not self.v2:
            return int(data) / 1e9 if data.strip() else None
        for line in data.split(b"\n"):
            if line.startswith(b"usage_usec "):
                return int(line.split()[1]) / 1e6
        return None

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1


def _read_counters(path: Path) -> dict[str, int]:
    counters: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                counters[key] = int(value)
    return counters


@dataclass(frozen=True)
class MemoryWatch:
    """Reads one seat's memory cgroup (v1 ``memory`` or v2) for signs that it ran out of memory."""

    directory: Path
    v2: bool

    @classmethod
    def for_dirs(cls, dirs: dict[str, Path]) -> MemoryWatch | None:
        if "memory" in dirs:
            return cls(dirs["memory"], v2=False)
        directory = dirs.get(V2)
        if directory is not None and (directory / "memory.events").exists():
            return cls(directory, v2=True)
        return None

    def oom_kills(self) -> int:
        """How many processes of the group the kernel's OOM killer killed."""
        name = "memory.events" if self.v2 else "memory.oom_control"
        return _read_counters(self.directory / name).get("oom_kill", 0)

    def limit_hits(self) -> int:
        """How many times the group's usage reached its limit (v1 ``failcnt``, v2 ``max`` events)."""
        if self.v2:
            return _read_counters(self.directory / "memory.events").get("max", 0)
        try:
            return int((self.directory / "memory.failcnt").read_text())
        except (OSError, ValueError):
            return 0

    def _bytes(self, name: str) -> int | None:
        try:
            text = (self.directory / name).read_text().strip()
        except OSError:
            return None
        return int(text) if text.isdigit() else None

    def usage(self) -> int | None:
        """Bytes the group uses now (v1 ``memory.usage_in_bytes``, v2 ``memory.current``)."""
        return self._bytes("memory.current" if self.v2 else "memory.usage_in_bytes")

    def limit(self) -> int | None:
        """The group's memory limit in bytes (``None``: none, or unknown)."""
        return self._bytes("memory.max" if self.v2 else "memory.limit_in_bytes")

    def exhausted(self, grace: float = 0.0) -> str:
        """A sentence when the group ran out of memory (an OOM kill, or usage at the limit), else ``""``.

        With ``grace``: if it has not (yet) but uses at least ``GRACE_FROM_FRACTION`` of its limit, watch
        it up to ``grace`` seconds more. A memory bomb that misses a deadline while still filling its
        memory (page faults are slow on a busy host) reaches its limit a moment later; an agent that is
        just slow, with its memory far from the limit, is not watched."""
        found = self._exhausted_now()
        if found or grace <= 0:
            return found
        usage, limit = self.usage(), self.limit()
        if usage is None or limit is None or usage < GRACE_FROM_FRACTION * limit:
            return ""
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            time.sleep(0.01)
            found = self._exhausted_now()
            if found:
                return found + " just after the deadline"
        return ""

    def _exhausted_now(self) -> str:
        kills = self.oom_kills()
        if kills:
            return f"the kernel killed {kills} of its processes for exceeding the memory limit"
        if self.limit_hits():
            return "its memory use reached the limit"
        return ""
