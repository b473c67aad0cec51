"""Is this worker fit to run jobs? Its sandbox (Docker engine, registry) must answer.

- :func:`current_problem` asks the probe named by ``WORKER_HEALTH_PROBE`` (by default
  ``run_duel.health:sandbox_problem``, called with ``settings.SANDBOX``), caching the answer for
  ``WORKER_HEALTH_INTERVAL_SECONDS`` in each process. The job runner asks it before claiming and after an
  infrastructure error, to decide whether the failure counts against the job.
- :func:`live_slots` and :func:`silent_after_s`: which workers count as running (their
  ``WorkerStatus`` rows, written by the worker's monitor in :mod:`core.worker` through
  :func:`core.actions.workers.report_worker_status`).
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings

from core.actions.jobs import db_in
from core.jobs.spool import disk_problem
from core.models import WorkerStatus

log = logging.getLogger(__name__)

#: Failed probes in a row before a worker stops consuming its queues.
UNHEALTHY_AFTER = 2

_cache: dict[str, tuple[float, str | None]] = {}
_cache_lock = threading.Lock()


def _probe() -> Callable[[str], str | None] | None:
    target = settings.WORKER_HEALTH_PROBE
    if not target:
        return None
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def probe_now() -> str | None:
    """Run the health probe now: ``None`` when healthy, else a one-line reason."""
    probe = _probe()
    if probe is None:
        return None
    try:
        problem = probe(settings.SANDBOX)
    except Exception as exc:  # a probe that breaks is itself a problem worth reporting
        problem = f"the health probe failed: {type(exc).__name__}: {exc}"
    if problem is None:  # a worker that could not keep a result through a database outage takes no job
        problem = disk_problem()
    with _cache_lock:
        _cache["problem"] = (time.monotonic(), problem)
    return problem


def current_problem(max_age_s: float | None = None) -> str | None:
    """The latest probe answer of this process, probing again when older than ``max_age_s`` (default
    ``WORKER_HEALTH_INTERVAL_SECONDS``)."""
    max_age = settings.WORKER_HEALTH_INTERVAL_SECONDS if max_age_s is None else max_age_s
    with _cache_lock:
        cached = _cache.get("problem")
    if cached is not None and time.monotonic() - cached[0] < max_age:
        return cached[1]
    return probe_now()


def silent_after_s() -> float:
    """A worker whose last report is older than this (database time) is not counted as running: three
    health intervals, at least 30 s (a monitor round can be late on a loaded machine)."""
    return max(3 * settings.WORKER_HEALTH_INTERVAL_SECONDS, 30.0)


def live_slots(queue: str | None = None) -> int:
    """Job slots of the workers that serve ``queue`` (default: the job hints' queue) and are healthy now:
    a report within :func:`silent_after_s` (database time), not stopped. Scheduling keeps these busy."""
    name = queue or settings.CELERY_TASK_DEFAULT_QUEUE
    rows = WorkerStatus.objects.filter(healthy=True, stopped=False, last_seen__gte=db_in(-silent_after_s()))
    # One query: the slots of the workers whose queues include ``name``, summed here.
    return sum(slots for queues, slots in rows.values_list("queues", "slots") if name in queues.split(","))
