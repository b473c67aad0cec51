"""``manage.py queue_status``: what the database says is queued, backing off, running, expired, finished,
and which workers are healthy. Every age is measured with the database's clock, like the leases."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand
from django.db.models import Count, DurationField, ExpressionWrapper, F, Max
from django.db.models.functions import Now

from core.models import Build, Duel, Revision, SmokeTest, WorkerStatus
from core.queue import broker_queue_size

#: Jobs backing off listed per kind (the count is always complete).
BACKING_OFF_SHOWN = 20


def _seconds(delta: timedelta | None) -> float | None:
    return None if delta is None else round(delta.total_seconds(), 1)


def duration(seconds: float | None) -> str:
    """Seconds as a person reads them: ``"-"`` for none, ``"42.0 s"``, ``"3 min 5 s"``,
    ``"2 h 4 min"``, ``"3 d 1 h"``."""
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s"


def _since(field: str) -> ExpressionWrapper:
    """``Now() - field`` (database time)."""
    return ExpressionWrapper(Now() - F(field), output_field=DurationField())


def _until(field: str) -> ExpressionWrapper:
    """``field - Now()`` (database time)."""
    return ExpressionWrapper(F(field) - Now(), output_field=DurationField())


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _backing_off(model: type[Build] | type[SmokeTest] | type[Duel]) -> tuple[int, list[dict[str, Any]]]:
    """QUEUED jobs that may not be claimed yet (``not_before`` in the future): how many, and the soonest."""
    waiting = model.objects.filter(state="QUEUED", not_before__gt=Now())
    rows = (
        waiting.annotate(wait=_until("not_before"))
        .order_by("not_before")
        .values("pk", "attempts", "wait", "failure_reason")[:BACKING_OFF_SHOWN]
    )
    shown = [
        {
            "id": row["pk"],
            "attempts": row["attempts"],
            "claimable_in_s": _seconds(row["wait"]),
            "last_failure": _last_line(row["failure_reason"]),
        }
        for row in rows
    ]
    return waiting.count(), shown


def _workers() -> list[dict[str, Any]]:
    """Every ``WorkerStatus`` row, with how long ago it last reported (database time). ``healthy`` only
    for a worker that runs (not stopped), reported within ``silent_after_s()`` and said it was
    healthy: a stopped or silent worker is never shown healthy (``reporting`` tells the silent ones)."""
    from core.jobs.health import silent_after_s

    silent_after = silent_after_s()
    rows = WorkerStatus.objects.annotate(age=_since("last_seen")).order_by("name")
    workers = []
    for w in rows:
        age = _seconds(w.age)
        reporting = not w.stopped and age is not None and age <= silent_after
        workers.append(
            {
                "name": w.name,
                "host": w.host,
                "queues": w.queues,
                "healthy": w.healthy and reporting,
                "problem": w.problem,
                "stopped": w.stopped,
                "reporting": reporting,
                "slots": w.slots,
                "last_seen_s": age,
            }
        )
    return workers


def worker_state(worker: dict[str, Any]) -> str:
    """How ``queue_status`` words one worker's state."""
    if worker["stopped"]:
        return "stopped"
    if worker["problem"] and not worker["healthy"]:
        return f"unhealthy: {worker['problem']}"
    if not worker["reporting"]:
        return "not reporting (it may have died)"
    return "healthy" if worker["healthy"] else "unhealthy"


def queue_status() -> dict[str, Any]:
    """Counts per state, oldest queued age (s), jobs backing off and expired leases for each job kind,
    revision states, the workers' health and the broker's queue length (``None`` if unknown)."""
    status: dict[str, Any] = {}
    for model in (Build, SmokeTest, Duel):
        states = dict(model.objects.values_list("state").annotate(n=Count("pk")).order_by())
        oldest_age = model.objects.filter(state="QUEUED").aggregate(age=Max(_since("enqueued_at")))["age"]
        backing_off, shown = _backing_off(model)
        status[str(model._meta.model_name)] = {
            "states": states,
            "oldest_queued_s": _seconds(oldest_age),
            "expired_leases": model.objects.filter(state="RUNNING", lease_expires_at__lt=Now()).count(),
            "backing_off": backing_off,
            "backing_off_jobs": shown,
        }
    status["revisions"] = dict(Revision.objects.values_list("state").annotate(n=Count("pk")).order_by())
    status["workers"] = _workers()
    status["broker_queue"] = broker_queue_size()
    return status


class Command(BaseCommand):
    help = (
        "Show job counts per state, the oldest queued job's age, jobs backing off, expired leases and "
        "each worker's health."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        status = queue_status()
        if options["json"]:
            self.stdout.write(json.dumps(status, indent=2, sort_keys=True))
            return
        for kind in ("build", "smoketest", "duel"):
            s = status[kind]
            states = " ".join(f"{k}={v}" for k, v in sorted(s["states"].items())) or "none"
            oldest, expired = s["oldest_queued_s"], s["expired_leases"]
            oldest_text = "nothing queued" if oldest is None else f"oldest queued {duration(oldest)} ago"
            self.stdout.write(
                f"{kind:10} {states}; {oldest_text}; backing off: {s['backing_off']}; "
                f"expired leases: {expired}"
            )
            for job in s["backing_off_jobs"]:
                self.stdout.write(
                    f"  {kind} {job['id']} claimable in {duration(job['claimable_in_s'])} after "
                    f"{job['attempts']} attempt(s): {job['last_failure']}"
                )
        self.stdout.write(
            "revisions  " + (" ".join(f"{k}={v}" for k, v in sorted(status["revisions"].items())) or "none")
        )
        workers = status["workers"]
        self.stdout.write(f"workers: {len(workers)}" + ("" if workers else " (none has reported)"))
        for w in workers:
            self.stdout.write(f"  {w['name']}: {worker_state(w)}; last seen {duration(w['last_seen_s'])} ago")
        self.stdout.write(f"broker queue length: {status['broker_queue']}")
