"""State changes of builds: claim, finish, infrastructure failure."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.actions.jobs import claim_job, lease_is_expired, release_locked_job
from core.actions.notifications import notify_revision_failed
from core.models import Build, Revision, SmokeTest
from core.queue import enqueue_on_commit

_ACCEPTS_RESULT = (Build.State.QUEUED, Build.State.RUNNING)


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "[... truncated ...]\n" + text[-limit:]


def claim_build(build_id: int, worker: str | None = None, lease_s: float | None = None) -> Build | None:
    """Claim build ``build_id`` for ``worker`` (``None`` if not claimable); its revision becomes BUILDING."""
    with transaction.atomic():
        build = claim_job(Build, build_id, worker, lease_s)
        if build is not None:
            Revision.objects.filter(pk=build.revision_id, state=Revision.State.UPLOADED).update(
                state=Revision.State.BUILDING, updated_at=timezone.now()
            )
    return build


def finish_build(
    build_id: int,
    *,
    ok: bool,
    agent_ref: str = "",
    log: str = "",
    error: str = "",
    duration_s: float | None = None,
) -> bool:
    """Store a build's outcome (the submission's success or fault). On success the revision is BUILT and
    its smoke test is queued; on failure it is BUILD_FAILED with ``error`` for its owner. Returns
    ``False`` (and changes nothing) if the build already has an outcome."""
    now = timezone.now()
    with transaction.atomic():
        build = Build.objects.select_for_update().filter(pk=build_id).first()
        if build is None or build.state not in _ACCEPTS_RESULT:
            return False
        build.state = Build.State.SUCCEEDED if ok else Build.State.FAILED
        build.agent_ref = agent_ref if ok else ""
        build.log = _tail(log, settings.BUILD_LOG_MAX_CHARS)
        build.error = error
        build.duration_s = duration_s
        build.finished_at = now
        build.lease_expires_at = None
        build.save(
            update_fields=[
                "state",
                "agent_ref",
                "log",
                "error",
                "duration_s",
                "finished_at",
                "lease_expires_at",
            ]
        )
        revision = Revision.objects.select_for_update().get(pk=build.revision_id)
        if revision.state not in (Revision.State.UPLOADED, Revision.State.BUILDING):
            return True  # e.g. rejected meanwhile: keep the build record, leave the revision alone
        if ok:
            revision.state = Revision.State.BUILT
            revision.agent_ref = agent_ref
            revision.built_at = now
            revision.error_message = ""
            revision.save(update_fields=["state", "agent_ref", "built_at", "error_message", "updated_at"])
            smoke = SmokeTest.objects.create(revision=revision, enqueued_at=now)
            enqueue_on_commit(SmokeTest.task_name, smoke.pk)
        else:
            revision.state = Revision.State.BUILD_FAILED
            revision.error_message = error or "the build failed (see the build log)"
            revision.save(update_fields=["state", "error_message", "updated_at"])
            notify_revision_failed(revision)
    return True


def fail_build(
    build_id: int, reason: str, *, retry: bool, if_lease_expired_before: datetime | None = None
) -> bool:
    """An infrastructure failure (never the submission's fault): re-queue the build while attempts remain,
    else mark it FAILED and tell the owner it was our problem. With ``if_lease_expired_before`` (the
    reaper), act only if the lease is still expired. Returns whether anything changed."""
    with transaction.atomic():
        build = Build.objects.select_for_update().filter(pk=build_id).first()
        if build is None or build.state not in _ACCEPTS_RESULT:
            return False
        if if_lease_expired_before is not None and not lease_is_expired(build, if_lease_expired_before):
            return False
        if not release_locked_job(build, reason, retry=retry):
            failed = Revision.objects.filter(
                pk=build.revision_id, state__in=[Revision.State.UPLOADED, Revision.State.BUILDING]
            ).update(
                state=Revision.State.BUILD_FAILED,
                error_message="The build could not run because of a problem on our side; "
                "an operator can re-queue it.",
                updated_at=timezone.now(),
            )
            if failed:
                notify_revision_failed(Revision.objects.get(pk=build.revision_id))
    return True
