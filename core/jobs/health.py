"""Is this worker fit to run jobs? Its sandbox (Docker engine, registry) must answer.

- :func:`current_problem` asks the probe named by ``WORKER_HEALTH_PROBE`` (by default
  ``run_duel.health:sandbox_problem``, called with ``settings.SANDBOX``), caching the answer for
  ``WORKER_HEALTH_INTERVAL_SECONDS`` in each process. The job runner asks it before claiming and after an
  infrastructure error, to decide whether the failure counts against the job.
- :class:`WorkerMonitor` runs in each Celery worker's main process (installed by :class:`MonitorStep`): it
  probes every interval, writes :class:`core.models.WorkerStatus` (database time), stops consuming the
  worker's queues while the probe fails and resumes when it passes, logs each change, and records the
  outcomes spooled on this host while the database was unreachable.
"""

from __future__ import annotations

import importlib
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from celery import bootsteps
from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models.functions import Now

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
        from core.jobs.spool import disk_problem

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


def report(
    name: str, *, healthy: bool, problem: str, queues: list[str], stopped: bool = False, slots: int = 0
) -> None:
    """Write this worker's row of ``WorkerStatus`` (database time)."""
    from core.models import WorkerStatus

    values: dict[str, Any] = {
        "host": socket.gethostname(),
        "sandbox": settings.SANDBOX,
        "queues": ",".join(queues)[:500],
        "problem": problem,
        "last_seen": Now(),
        "stopped": stopped,
        "slots": slots,
    }
    updated = WorkerStatus.objects.filter(name=name, healthy=healthy).update(**values)
    if not updated:
        changed = WorkerStatus.objects.filter(name=name).update(healthy=healthy, changed_at=Now(), **values)
        if not changed:
            WorkerStatus.objects.create(name=name, healthy=healthy, changed_at=Now(), **values)


def silent_after_s() -> float:
    """A worker whose last report is older than this (database time) is not counted as running: three
    health intervals, at least 30 s (a monitor round can be late on a loaded machine)."""
    return max(3 * settings.WORKER_HEALTH_INTERVAL_SECONDS, 30.0)


def live_slots(queue: str | None = None) -> int:
    """Job slots of the workers that serve ``queue`` (default: the job hints' queue) and are healthy now:
    a report within :func:`silent_after_s` (database time), not stopped. Scheduling keeps these busy."""
    from django.db.models import Sum

    from core.actions.jobs import db_in
    from core.models import WorkerStatus

    name = queue or settings.CELERY_TASK_DEFAULT_QUEUE
    rows = WorkerStatus.objects.filter(healthy=True, stopped=False, last_seen__gte=db_in(-silent_after_s()))
    serving = [pk for pk, queues in rows.values_list("pk", "queues") if name in queues.split(",")]
    return int(WorkerStatus.objects.filter(pk__in=serving).aggregate(n=Sum("slots"))["n"] or 0)


class WorkerMonitor:
    """Probes the sandbox, reports, gates consumption, flushes the spool; one thread per worker."""

    def __init__(self, consumer: Any, flush: Callable[[], int]) -> None:
        self.consumer = consumer
        self.flush = flush
        self.name = consumer.hostname
        self.queues = sorted(consumer.app.amqp.queues.consume_from or consumer.app.amqp.queues)
        self.slots = int(getattr(getattr(consumer, "controller", None), "concurrency", 0) or 0)
        self.healthy = True
        self.failed_probes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="worker-monitor", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        try:
            problem = "" if self.healthy else (current_problem() or "")
            report(
                self.name,
                healthy=self.healthy,
                problem=problem,
                queues=self.queues,
                stopped=True,
                slots=self.slots,
            )
        except DatabaseError:
            pass
        finally:
            connection.close()

    def _set_consuming(self, consume: bool) -> None:
        consumer = self.consumer

        def apply() -> None:
            for queue in self.queues:
                try:
                    if consume:
                        consumer.add_task_queue(queue)
                    else:
                        consumer.cancel_task_queue(queue)
                except Exception:  # the connection is being re-established: the next round retries
                    log.exception("could not %s queue %s", "resume" if consume else "pause", queue)

        hub = getattr(consumer, "hub", None)
        if hub is not None:
            hub.call_soon(apply)  # kombu's hub is thread-safe for call_soon and wakes its loop
        else:
            apply()

    def check(self) -> None:
        """One round: probe, change consumption on a transition, report, flush the spool. It takes
        ``UNHEALTHY_AFTER`` failed probes in a row to stop consuming (one slow answer on a loaded machine
        is not an outage) and one good probe to resume."""
        problem = probe_now()
        self.failed_probes = self.failed_probes + 1 if problem is not None else 0
        healthy = self.failed_probes < UNHEALTHY_AFTER
        if healthy != self.healthy:
            self.healthy = healthy
            if healthy:
                log.warning("worker %s is healthy again: consuming %s", self.name, ", ".join(self.queues))
            else:
                log.error(
                    "worker %s is unhealthy (%s): it takes no job until this clears", self.name, problem
                )
            self._set_consuming(healthy)
        try:
            report(self.name, healthy=healthy, problem=problem or "", queues=self.queues, slots=self.slots)
            self.flush()
        except DatabaseError as exc:
            log.warning("worker monitor: the database is unreachable (%s)", exc)
            connection.close()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    self.check()
                except Exception:  # never let the monitor die
                    log.exception("worker monitor round failed")
                self._stop.wait(settings.WORKER_HEALTH_INTERVAL_SECONDS)
        finally:
            connection.close()


class MonitorStep(bootsteps.StartStopStep):
    """Celery consumer step that runs one :class:`WorkerMonitor` per worker node."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.monitor: WorkerMonitor | None = None

    def start(self, parent: Any) -> None:
        if self.monitor is not None:  # the consumer restarted after a broker reconnect
            self.monitor.consumer = parent
            if not self.monitor.healthy:
                self.monitor._set_consuming(False)
            return
        from core.jobs.runner import flush_spool

        self.monitor = WorkerMonitor(parent, flush_spool)
        self.monitor.start()

    def shutdown(self, parent: Any) -> None:
        if self.monitor is not None:
            self.monitor.stop()
            self.monitor = None
