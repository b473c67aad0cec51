"""Recovering work from the database when workers or the broker lose it (called by the reaper)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.actions.builds import fail_build
from core.actions.duels import fail_duel
from core.actions.smoke_tests import fail_smoke_test
from core.models import Build, Duel, SmokeTest
from core.models.jobs import LeasedJob
from core.queue import broker_queue_size, send_task

log = logging.getLogger(__name__)

_FAILERS = ((Build, fail_build), (SmokeTest, fail_smoke_test), (Duel, fail_duel))
BATCH = 500


def requeue_expired_leases(now: datetime | None = None) -> dict[str, int]:
    """Re-queue (or, after ``MAX_ATTEMPTS``, fail) every RUNNING job whose lease ended before ``now``:
    its worker died or hung. Never charged to a player. Returns counts per job kind."""
    now = now or timezone.now()
    counts: dict[str, int] = {}
    for model, fail in _FAILERS:
        expired = list(
            model.objects.filter(state="RUNNING", lease_expires_at__lt=now)
            .order_by("lease_expires_at")
            .values_list("pk", flat=True)[:BATCH]
        )
        done = 0
        for job_id in expired:
            if fail(
                job_id,
                "lease expired: the worker died or stopped responding",
                retry=True,
                if_lease_expired_before=now,
            ):
                done += 1
        counts[model._meta.model_name] = done
        if done:
            log.warning("re-queued %d %s job(s) whose lease expired", done, model._meta.model_name)
    return counts


def resend_stale_hints(now: datetime | None = None, *, force: bool = False) -> dict[str, int]:
    """Re-send the task message of QUEUED jobs whose last hint is older than ``STALE_QUEUED_SECONDS``.

    The broker may have lost them (Redis flushed or restarted, filesystem broker wiped). To avoid piling
    up duplicates behind a long backlog, this only runs when the broker queue is empty (or ``force``);
    duplicates that still happen are harmless, because claiming is atomic."""
    now = now or timezone.now()
    if not force:
        size = broker_queue_size()
        if size is None or size > 0:
            return {}
    cutoff = now - timedelta(seconds=settings.STALE_QUEUED_SECONDS)
    counts: dict[str, int] = {}
    model: type[LeasedJob]
    for model, _fail in _FAILERS:
        order = ["-priority", "enqueued_at"] if model is Duel else ["enqueued_at"]
        stale = list(
            model.objects.filter(state="QUEUED", enqueued_at__lt=cutoff)
            .order_by(*order)
            .values_list("pk", flat=True)[:BATCH]
        )
        if stale:
            with transaction.atomic():
                model.objects.filter(pk__in=stale, state="QUEUED").update(enqueued_at=now)
            for job_id in stale:
                send_task(model.task_name, job_id)
            log.warning("re-sent %d lost %s hint(s)", len(stale), model._meta.model_name)
        counts[model._meta.model_name] = len(stale)
    return counts


def requeue_failed(*, include_submission_faults: bool = False) -> dict[str, int]:
    """Operator action: give every FAILED job (infrastructure failures) fresh attempts and queue it.

    Builds that failed through the submission's fault stay failed unless ``include_submission_faults``."""
    from core.actions.duels import requeue_duel
    from core.actions.submissions import requeue_build, requeue_smoke_test

    counts = {"build": 0, "smoketest": 0, "duel": 0}
    builds = Build.objects.filter(state=Build.State.FAILED)
    if not include_submission_faults:
        builds = builds.exclude(failure_reason="")
    for revision_id in set(builds.values_list("revision_id", flat=True)):
        if not Build.objects.filter(
            revision_id=revision_id, state__in=["QUEUED", "RUNNING", "SUCCEEDED"]
        ).exists():
            requeue_build(revision_id)
            counts["build"] += 1
    for revision_id in set(
        SmokeTest.objects.filter(state=SmokeTest.State.FAILED).values_list("revision_id", flat=True)
    ):
        if not SmokeTest.objects.filter(
            revision_id=revision_id, state__in=["QUEUED", "RUNNING", "SUCCEEDED"]
        ).exists():
            requeue_smoke_test(revision_id)
            counts["smoketest"] += 1
    for duel_id in Duel.objects.filter(state=Duel.State.FAILED).values_list("pk", flat=True):
        counts["duel"] += int(requeue_duel(duel_id))
    return counts
