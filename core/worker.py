"""Worker-only wiring of the Celery app: imported by worker (and beat) processes only.

``core.celery`` lists this module in the app's ``imports``, which Celery imports when a worker starts
(``celery -A core worker``, ``manage.py run_dev_worker``), before it builds its consumer: the web and
every other process that imports ``core`` never load it, nor the job runner behind it.

- :class:`MonitorStep`, the consumer step that runs one :class:`WorkerMonitor` per worker node: every
  ``WORKER_HEALTH_INTERVAL_SECONDS`` it probes (:mod:`core.jobs.health`), writes the worker's
  ``WorkerStatus`` (:func:`core.actions.workers.report_worker_status`, database time), stops consuming
  the worker's queues while the probe fails and resumes when it passes, logs each change, and records the
  outcomes spooled on this host while the database was unreachable (:func:`core.jobs.runner.flush_spool`).
- :func:`resend_after_database_error`, connected to Celery's ``task_failure``: a database error never
  drops a hint.
- :func:`close_old_connections_around_task`, connected to Celery's ``task_prerun`` and ``task_postrun``: a
  worker's database connection lives as a web request's does (``DATABASE_CONN_MAX_AGE``, closed when
  broken or past its age; ``CONN_HEALTH_CHECKS`` before its first use in a task) instead of being closed
  after every task by Celery's Django fix-up (``core.celery`` turns that off): a connection per task cost
  PostgreSQL a backend start per result.
- :func:`limit_idle_transactions`, connected to Django's ``connection_created``: PostgreSQL ends a worker
  session that sits inside an open transaction for ``WORKER_DB_IDLE_TRANSACTION_TIMEOUT_S``, so a worker
  frozen while it holds a job's row lock (a stopped VM, SIGSTOP, a GC pause) gives the lock back and the
  reaper can re-queue its job once the lease ends.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from celery import bootsteps
from celery.signals import task_failure, task_postrun, task_prerun
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, connections
from django.db.backends.signals import connection_created

from core.actions.workers import report_worker_status
from core.celery import app
from core.jobs.health import UNHEALTHY_AFTER, current_problem, probe_now
from core.jobs.runner import flush_spool
from core.queue import send_task

log = logging.getLogger(__name__)


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
            report_worker_status(
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
            report_worker_status(
                self.name, healthy=healthy, problem=problem or "", queues=self.queues, slots=self.slots
            )
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
        self.monitor = WorkerMonitor(parent, flush_spool)
        self.monitor.start()

    def shutdown(self, parent: Any) -> None:
        if self.monitor is not None:
            self.monitor.stop()
            self.monitor = None


def resend_after_database_error(task_name: str, args: Any, exc: BaseException) -> bool:
    """A task whose database was unreachable (``exc`` a lost or refused connection) keeps its hint: the
    same message is sent again, to run ``max(2 x WORKER_HEALTH_INTERVAL_SECONDS, REAPER_INTERVAL_SECONDS)``
    later (the broker is not the database: it usually still answers). A periodic task (beat's schedule)
    is not re-sent, beat sends the next round; either way the log says so. Returns whether it re-sent."""
    if not isinstance(exc, (OperationalError, InterfaceError)):
        return False
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    periodic = {entry["task"] for entry in (app.conf.beat_schedule or {}).values()}
    if task_name in periodic:
        log.warning(
            "%s skipped: the database is unreachable (%s); its next periodic round retries", task_name, reason
        )
        return False
    delay = max(2 * settings.WORKER_HEALTH_INTERVAL_SECONDS, settings.REAPER_INTERVAL_SECONDS)
    log.warning(
        "%s%r: the database is unreachable (%s); the hint is sent again in %.0f s",
        task_name,
        tuple(args),
        reason,
        delay,
    )
    send_task(task_name, *args, countdown=delay)
    return True


def close_old_connections_around_task(sender: Any = None, **kwargs: Any) -> None:
    """Before and after each task: close the connections that are broken or older than
    ``DATABASE_CONN_MAX_AGE`` (0: every one, as Celery's fix-up did), keep the others (Django's
    ``close_old_connections``, what it does around a web request). An eager task runs inside its caller's
    request or test: left alone, and so is any connection inside a transaction (it belongs to whoever
    opened it: Django would mark that transaction for rollback instead of closing the connection)."""
    request = getattr(sender, "request", None)
    if getattr(request, "is_eager", False):
        return
    for conn in connections.all(initialized_only=True):
        if not conn.in_atomic_block:
            conn.close_if_unusable_or_obsolete()


task_prerun.connect(close_old_connections_around_task, dispatch_uid="rl-arena-worker-db-prerun")
task_postrun.connect(close_old_connections_around_task, dispatch_uid="rl-arena-worker-db-postrun")


def limit_idle_transactions(sender: Any = None, **kwargs: Any) -> None:
    """Every PostgreSQL session of a worker process ends when it has sat inside an open transaction for
    ``WORKER_DB_IDLE_TRANSACTION_TIMEOUT_S`` (0: never). A worker's transactions are a few statements
    long; one that idles that long belongs to a frozen process, whose row locks would otherwise stop the
    reaper and every record of the same rows until it wakes up."""
    created = kwargs.get("connection")
    timeout_s = settings.WORKER_DB_IDLE_TRANSACTION_TIMEOUT_S
    if created is None or created.vendor != "postgresql" or timeout_s <= 0:
        return
    with created.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('idle_in_transaction_session_timeout', %s, false)", [f"{timeout_s}s"]
        )


connection_created.connect(limit_idle_transactions, dispatch_uid="rl-arena-worker-idle-transactions")


@task_failure.connect
def _keep_hints_across_database_errors(
    sender: Any = None, exception: BaseException | None = None, args: Any = None, **_: Any
) -> None:
    """A database error never drops a hint silently: the task's message is sent again (a periodic task
    is left to its next round), and the log says which."""
    if sender is not None and exception is not None:
        resend_after_database_error(sender.name, args or (), exception)


app.steps["consumer"].add(MonitorStep)
