"""CPU placement for duels: the referee and both agents of one duel share one core.

A duel is strictly turn-based: the referee waits while an agent thinks, and the other agent waits for
its turn, so the three processes never need two cores at once. What a move costs is mostly waking the
process whose turn it is; when it sleeps on another core the kernel must interrupt that core (on a
virtual machine an inter-processor interrupt is a hypervisor exit), which measured 58-70 µs per round
trip here against 3-7 µs when both ends share a core. So a duel claims a *slot* (a core, or
``ceil(Limits.cpus)`` cores when agents may use more than one), pins its agents and its referee thread
there once they are ready, and releases the slot when it ends. Start-up runs unpinned, because the two
agents' Python and numpy imports do run in parallel.

Slots are taken with ``flock`` on files in a folder every referee on the host shares
(``$AGENT_RUNTIME_DIR``, else the system temp folder), so concurrent duels of every worker process go to
different cores; a lock dies with its process. When every slot is taken (more duels than cores), the duel
runs unpinned and the kernel balances it. ``DUEL_CPU_PINNING=off`` turns placement off.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from run_duel.sandbox.base import runtime_dir
from run_duel.settings import run_duel_settings

ENV_SWITCH = "DUEL_CPU_PINNING"
LOCK_FOLDER = "rl-arena-cpu-slots"


def pinning_enabled() -> bool:
    """Whether ``$DUEL_CPU_PINNING`` allows placement (default: on; a value that is not a boolean stops
    the process, ``run_duel.settings``)."""
    return run_duel_settings().cpu_pinning


@dataclass
class CpuSlot:
    """Cores held by one duel until ``release``; ``cpus`` is the set the duel runs on."""

    cpus: frozenset[int]
    _fd: int = field(repr=False, default=-1)
    _saved_affinity: set[int] | None = field(repr=False, default=None)

    def pin_current_thread(self) -> None:
        """Move the calling thread (the referee's) onto the slot; ``release`` moves it back."""
        if self._saved_affinity is None:
            self._saved_affinity = os.sched_getaffinity(0)
        os.sched_setaffinity(0, self.cpus)

    def release(self) -> None:
        """Give the slot back and restore the calling thread's affinity (idempotent)."""
        if self._saved_affinity is not None:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, self._saved_affinity)
            self._saved_affinity = None
        if self._fd >= 0:
            os.close(self._fd)  # closing drops the flock
            self._fd = -1


def claim_cpu_slot(width: int = 1, *, lock_dir: Path | None = None) -> CpuSlot | None:
    """Claim a free slot of ``width`` cores among those this process may use; ``None`` when placement
    is off, pointless (no more cores than one slot) or every slot is taken."""
    if not pinning_enabled():
        return None
    allowed = sorted(os.sched_getaffinity(0))
    width = max(1, width)
    if len(allowed) <= width:
        return None
    slots = [allowed[i : i + width] for i in range(0, len(allowed) - width + 1, width)]
    folder = lock_dir or runtime_dir() / LOCK_FOLDER
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    start = os.getpid() % len(slots)  # spread first choices of different processes
    for offset in range(len(slots)):
        cpus = slots[(start + offset) % len(slots)]
        path = folder / f"cpus-{'-'.join(map(str, cpus))}.lock"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        return CpuSlot(frozenset(cpus), fd)
    return None


def slot_width(cpus: float) -> int:
    """Cores a slot needs for agents limited to ``cpus`` CPUs each."""
    return max(1, math.ceil(cpus))
