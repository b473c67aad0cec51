"""This host's agent containers over a Docker worker's life (``SANDBOX=docker``).

- **Orphans**, in a thread of their own in each worker's main process (every ``REAPER_INTERVAL_SECONDS``):
  containers whose referee died (a killed worker process or machine, the engine down when they were
  killed) are thawed and removed by ``run_duel.api.reap_orphans``, in bounded rounds. The
  reaper of the control plane never waits for them, and each host sweeps its own engine.
- **A graceful stop** leaves nothing behind: each pool process closes its warm containers as it exits
  (``worker_process_shutdown``; a pool process ends with ``os._exit``, which skips ``atexit``), and the
  main process sweeps once more after its pool has stopped (``worker_shutdown``), which also removes the
  containers of a pool process that was killed.

Only workers that run agents sweep (a worker whose ``WORKER_HEALTH_PROBE`` is empty runs none).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery.signals import worker_process_shutdown, worker_ready, worker_shutdown
from django.conf import settings

log = logging.getLogger(__name__)


def _runs_agents() -> bool:
    return settings.SANDBOX == "docker" and bool(settings.WORKER_HEALTH_PROBE)


def sweep() -> int:
    """One bounded round of orphan removal on this host's engine; returns how many were removed."""
    try:
        from run_duel.api import reap_orphans

        return len(reap_orphans(settings.ORPHAN_CONTAINER_MAX_AGE_SECONDS))
    except Exception:  # the engine may be restarting; try again next round
        log.exception("could not reap orphan containers")
        return 0


class OrphanSweeper:
    """The worker's thread that removes this host's orphan containers every ``REAPER_INTERVAL_SECONDS``."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="orphan-containers", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(settings.REAPER_INTERVAL_SECONDS):
            removed = sweep()
            if removed:
                log.warning("removed %d orphan agent container(s)", removed)


_sweeper: OrphanSweeper | None = None


@worker_ready.connect
def _start_sweeping(**_: Any) -> None:
    global _sweeper
    if _runs_agents() and _sweeper is None:
        _sweeper = OrphanSweeper()
        _sweeper.start()


@worker_process_shutdown.connect
def _close_warm_containers(**_: Any) -> None:
    if _runs_agents():
        from run_duel.api import close_warm_pools

        close_warm_pools()


@worker_shutdown.connect
def _last_sweep(**_: Any) -> None:
    global _sweeper
    if _sweeper is not None:
        _sweeper.stop()
        _sweeper = None
    if _runs_agents():
        removed = sweep()
        log.warning("worker stopping: removed %d agent container(s) its processes left", removed)
