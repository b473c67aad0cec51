"""Recovering work from the database when workers or the broker lose it (called by the reaper).

Every comparison with "now" is the database's clock. Nothing here depends on what the broker says: a
lost hint or a dead worker is found from the rows alone (a lost rating trigger:
``core.rating_outbox.resend_rating_triggers``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import DurationField, ExpressionWrapper, F, Q

from core.actions.builds import fail_build, on_build_requeued
from core.actions.duels import fail_duel, on_duel_requeued
from core.actions.jobs import db_in, db_now, requeue_failed_job
from core.actions.smoke_tests import fail_smoke_test, on_smoke_test_requeued
from core.models import Build, Duel, ReaperState, Revision, SmokeTest
from core.queue import send_task

log = logging.getLogger(__name__)

#: The kinds of leased jobs (each with its own ``state`` field), and how each fails.
JobModel = type[Build] | type[SmokeTest] | type[Duel]
_FAILERS: tuple[tuple[JobModel, Callable[..., bool]], ...] = (
    (Build, fail_build),
    (SmokeTest, fail_smoke_test),
    (Duel, fail_duel),
)
BATCH = 500


def begin_reaper_round() -> bool:
    """Record this round (database time); ``False`` while expired leases must be left alone because the
    previous round is long past (the database or the beat was down): workers cut off meanwhile get one
    lease to send a heartbeat, take their jobs back and record spooled results before anything is
    re-queued."""
    gap_allowed = max(3 * settings.REAPER_INTERVAL_SECONDS, settings.LEASE_SECONDS)
    with transaction.atomic():
        ReaperState.objects.select_for_update().get_or_create(pk=1)
        stale = ReaperState.objects.filter(pk=1, last_round_at__lt=db_in(-gap_allowed)).exists()
        changes: dict[str, Any] = {"last_round_at": db_now()}
        if stale:
            pause = settings.LEASE_SECONDS + settings.HEARTBEAT_SECONDS
            changes["leases_paused_until"] = db_in(pause)
            log.warning("the previous reaper round is long past: expired leases wait %.0f s", pause)
        ReaperState.objects.filter(pk=1).update(**changes)
        paused = ReaperState.objects.filter(pk=1, leases_paused_until__gt=db_now()).exists()
    return not paused


def requeue_expired_leases() -> dict[str, int]:
    """Re-queue (or, after ``MAX_ATTEMPTS``, fail) every RUNNING job whose worker sent no heartbeat for a
    lease (database time): it died, hung or lost its machine. Never charged to a player."""
    counts: dict[str, int] = {}
    for model, fail in _FAILERS:
        expired = list(
            model.objects.filter(state="RUNNING", lease_expires_at__lt=db_now())
            .order_by("lease_expires_at")
            .values_list("pk", flat=True)[:BATCH]
        )
        done = sum(
            bool(fail(job_id, "no heartbeat for a lease: the worker died or stopped responding", claim=None))
            for job_id in expired
        )
        counts[str(model._meta.model_name)] = done
        if done:
            log.warning("re-queued %d %s job(s) without heartbeat", done, model._meta.model_name)
    return counts


def resend_stale_hints() -> dict[str, int]:
    """Re-send the task message of claimable QUEUED jobs whose last hint is older than
    ``STALE_QUEUED_SECONDS`` (database time), whatever the broker queue holds: the broker may have lost
    them (Redis flushed or restarted, broker files lost). Duplicates are harmless: claiming is atomic."""
    cutoff = db_in(-settings.STALE_QUEUED_SECONDS)
    counts: dict[str, int] = {}
    for model, _fail in _FAILERS:
        order = ["-priority", "enqueued_at"] if model is Duel else ["enqueued_at"]
        stale = list(
            model.objects.filter(state="QUEUED", enqueued_at__lt=cutoff, attempts__lt=settings.MAX_ATTEMPTS)
            .filter(Q(not_before__isnull=True) | Q(not_before__lte=db_now()))
            .order_by(*order)
            .values_list("pk", flat=True)[:BATCH]
        )
        if stale:
            with transaction.atomic():
                model.objects.filter(pk__in=stale, state="QUEUED").update(enqueued_at=db_now())
            for job_id in stale:
                send_task(model.task_name, job_id)
            log.warning("re-sent %d lost %s hint(s)", len(stale), model._meta.model_name)
        counts[str(model._meta.model_name)] = len(stale)
    return counts


def _retry_due(model: JobModel) -> list[int]:
    """FAILED jobs whose next automatic retry round is due (``FAILED_RETRY_SECONDS x 2^round`` after
    they failed, database time)."""
    if settings.FAILED_RETRY_ROUNDS <= 0:
        return []
    age = ExpressionWrapper(db_now() - F("finished_at"), output_field=DurationField())
    final = Q(error="") if model is Build else Q()  # a build's submission's own faults are final
    failed = model.objects.filter(final, state="FAILED", retry_rounds__lt=settings.FAILED_RETRY_ROUNDS)
    rows = (
        failed.exclude(finished_at__isnull=True)
        .annotate(age=age)
        .order_by("finished_at")
        .values_list("pk", "age", "retry_rounds")[:BATCH]
    )
    return [
        pk
        for pk, failed_for, rounds in rows
        if failed_for is not None
        and failed_for.total_seconds() >= settings.FAILED_RETRY_SECONDS * (2**rounds)
    ]


def retry_failed_jobs() -> dict[str, int]:
    """Automatic retry of jobs FAILED for infrastructure faults, with a growing pause between rounds: the
    fault (engine, registry, image) may have cleared. Never for a build whose submission was at fault, a
    revision that has moved on, or a duel whose revisions were rejected. Returns counts per kind."""
    counts = {"build": 0, "smoketest": 0, "duel": 0}
    for build_id in _retry_due(Build):
        with transaction.atomic():
            build = Build.objects.select_for_update().get(pk=build_id)
            current = Revision.objects.filter(pk=build.revision_id, state="BUILD_FAILED").exists()
            newer = Build.objects.filter(revision_id=build.revision_id, pk__gt=build.pk).exists()
            if current and not newer and (requeued := requeue_failed_job(Build, build_id, automatic=True)):
                on_build_requeued(requeued)
                counts["build"] += 1
    for smoke_id in _retry_due(SmokeTest):
        with transaction.atomic():
            smoke = SmokeTest.objects.select_for_update().get(pk=smoke_id)
            current = Revision.objects.filter(pk=smoke.revision_id, state=Revision.State.TEST_FAILED).exists()
            newer = SmokeTest.objects.filter(revision_id=smoke.revision_id, pk__gt=smoke.pk).exists()
            if (
                current
                and not newer
                and (requeued_smoke := requeue_failed_job(SmokeTest, smoke_id, automatic=True))
            ):
                on_smoke_test_requeued(requeued_smoke)
                counts["smoketest"] += 1
    for duel_id in _retry_due(Duel):
        with transaction.atomic():
            duel = Duel.objects.select_for_update().get(pk=duel_id)
            playable = Revision.objects.filter(
                pk__in=[duel.revision_1_id, duel.revision_2_id], state=Revision.State.ELIGIBLE
            ).count() == len({duel.revision_1_id, duel.revision_2_id})
            if playable and (requeued_duel := requeue_failed_job(Duel, duel_id, automatic=True)):
                on_duel_requeued(requeued_duel)
                counts["duel"] += 1
    if any(counts.values()):
        log.warning("retrying jobs that failed for infrastructure faults: %s", counts)
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
