"""The one job runner: every leased job (build, smoke test, duel, live game) runs through :func:`run_job`.

A job kind declares only what differs (:class:`JobKind`): how to claim it, the work, how to store its
outcome and how to fail it. The runner does the rest, the same way for all of them:

1. records outcomes spooled on this host while the database was unreachable (:mod:`core.jobs.spool`);
2. refuses to claim while this worker is unhealthy (its sandbox does not answer): the hint is re-sent
   for later, so a healthy worker takes it and no attempt is used;
3. claims the row (fenced: the claim's generation goes with every later write); a claim refused because
   the job is backing off, or its holder's lease has not ended yet, re-sends the hint for that moment;
4. keeps the claim alive with a heartbeat (database time) while the work runs;
5. stores the outcome through the kind's fenced action, retrying across a database blip and spooling it
   to disk when the outage lasts longer;
6. on an infrastructure error (any exception from the work), re-queues the job with backoff; the
   attempt counts against the job only if the worker's health probe passes right after the error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

from core.actions.jobs import Claim, seconds_until_claimable
from core.db import retry_on_db_error
from core.jobs import spool
from core.jobs.health import current_problem
from core.jobs.heartbeat import Heartbeat
from core.models.jobs import FencedWork
from core.queue import send_task

log = logging.getLogger(__name__)

J = TypeVar("J", bound=FencedWork)

#: Every declared kind by name (the spool names files after it); filled by :class:`JobKind`.
KINDS: dict[str, JobKind[Any]] = {}


class InfrastructureError(Exception):
    """Our side failed (sandbox, engine, registry, a result that is not the players' doing): the job is
    re-queued, never charged to a player or a submission. ``counted=False`` parks it without using an
    attempt whatever the worker's health (the platform is repairing the cause, e.g. rebuilding a lost
    image), ``delay_s`` overrides the backoff."""

    def __init__(self, reason: str, *, counted: bool | None = None, delay_s: float | None = None) -> None:
        super().__init__(reason)
        self.counted = counted
        self.delay_s = delay_s


@dataclass(frozen=True)
class JobKind(Generic[J]):
    """What one kind of job declares; the runner supplies the lifecycle.

    - ``claim(job_id)``: the core action that claims the row (``None``: not claimable now).
    - ``work(job, claim)``: does the job and returns its outcome as JSON-able data; raises on our failures.
    - ``record(claim, outcome)``: the fenced core action storing the outcome (``False``: refused, the job
      is over or another worker holds it). ``None`` when the work stores its own progress (live games).
    - ``fail(job_id, reason, claim=, counted=)``: the core action for an infrastructure failure.
    - ``uses_sandbox``: whether the worker's health (its sandbox) matters for this kind.
    """

    name: str
    model: type[J]
    claim: Callable[[int], J | None]
    work: Callable[[J, Claim], dict[str, Any]]
    record: Callable[[Claim, dict[str, Any]], bool] | None
    fail: Callable[..., bool]
    uses_sandbox: bool = True

    def __post_init__(self) -> None:
        KINDS[self.name] = self


def _resend(kind: JobKind[Any], job_id: int, countdown: float) -> None:
    send_task(kind.model.task_name, job_id, countdown=countdown)


def run_job(kind: JobKind[J], job_id: int) -> str:
    """Run job ``job_id`` of ``kind`` once, whoever delivered the hint; returns what happened."""
    flush_spool()
    if kind.uses_sandbox and (problem := current_problem()) is not None:
        log.warning("%s %s not taken: this worker is unhealthy (%s)", kind.name, job_id, problem)
        _resend(kind, job_id, 2 * settings.WORKER_HEALTH_INTERVAL_SECONDS)
        return "worker unhealthy"
    job = kind.claim(job_id)
    if job is None:
        wait = seconds_until_claimable(kind.model, job_id)
        if wait is not None and wait > 0:  # backing off, or its holder may have died: come back then
            _resend(kind, job_id, wait + 0.5)
        return "not claimed"
    claim = Claim.of(job)
    # The heartbeat lasts until the outcome is stored: a worker retrying across a database outage keeps
    # its claim, and its first beat after the outage renews the lease before a reaper round can re-queue.
    with Heartbeat(kind.model, claim):
        try:
            outcome = kind.work(job, claim)
        except Exception as exc:
            return _failed(kind, claim, exc)
        if kind.record is None:
            return str(outcome.get("outcome") or "done")  # what the work says happened (live games)
        return _store(kind, claim, outcome)


def _failed(kind: JobKind[Any], claim: Claim, exc: Exception) -> str:
    """Our failure: re-queue with backoff; counted only if this worker is healthy right now."""
    reason = str(exc) if isinstance(exc, InfrastructureError) else f"{type(exc).__name__}: {exc}"
    if not isinstance(exc, InfrastructureError):
        log.exception("%s %s could not run", kind.name, claim.job_id, exc_info=exc)
    else:
        log.warning("%s %s: infrastructure error: %s", kind.name, claim.job_id, reason)
    problem = current_problem(max_age_s=0) if kind.uses_sandbox else None
    if problem is not None:
        reason = f"{reason} (this worker is unhealthy: {problem})"
    counted = problem is None
    options: dict[str, Any] = {}
    if isinstance(exc, InfrastructureError):
        counted = counted if exc.counted is None else exc.counted and counted
        if exc.delay_s is not None:
            options["delay_s"] = exc.delay_s
    retry_on_db_error(lambda: kind.fail(claim.job_id, reason, claim=claim, counted=counted, **options))
    return "infrastructure error"


def _store(kind: JobKind[Any], claim: Claim, outcome: dict[str, Any]) -> str:
    """Store ``outcome`` through the kind's fenced action; spool it if the database stays away."""
    record = kind.record
    assert record is not None
    try:
        stored = retry_on_db_error(lambda: record(claim, outcome))
    except (OperationalError, InterfaceError):
        connection.close()
        try:
            spool.put(kind.name, claim, outcome)
            return "spooled"
        except OSError as exc:  # the disk cannot take it either: keep it in memory until the database answers
            log.error(
                "%s %s: the outcome cannot be spooled (%s); waiting for the database with it in memory",
                kind.name,
                claim.job_id,
                exc,
            )
            stored = _record_when_the_database_answers(kind, claim, outcome)
    if not stored:
        log.warning(
            "%s %s: outcome refused (it is over, or another worker holds it)", kind.name, claim.job_id
        )
    return "recorded" if stored else "refused"


def _record_when_the_database_answers(kind: JobKind[Any], claim: Claim, outcome: dict[str, Any]) -> bool:
    """Store ``outcome`` however long the database takes (the worker's heartbeat keeps the claim while it
    waits): the last resort for a played result that neither the database nor the disk can take now."""
    assert kind.record is not None
    delay = 1.0
    while True:
        try:
            return kind.record(claim, outcome)
        except (OperationalError, InterfaceError):
            connection.close()
            time.sleep(delay)
            delay = min(delay * 2, 30.0)


def flush_spool() -> int:
    """Record the outcomes spooled on this host through their kinds' fenced actions (:func:`spool.drain`);
    returns how many were taken."""
    return spool.drain({name: kind.record for name, kind in KINDS.items()})
