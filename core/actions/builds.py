"""State changes of builds: claim, finish, infrastructure failure."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.actions.jobs import Claim, claim_job, database_time, fail_job, lock_claimed
from core.actions.notifications import notify_revision_failed
from core.models import Build, Revision, SmokeTest
from core.queue import enqueue_on_commit


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "[... truncated ...]\n" + text[-limit:]


def claim_build(build_id: int, worker: str | None = None, lease_s: float | None = None) -> Build | None:
    """Claim build ``build_id`` for ``worker`` (``None`` if not claimable); its revision becomes BUILDING."""
    with transaction.atomic():
        build = claim_job(Build, build_id, worker, lease_s, related=("revision",))
        if build is not None:
            Revision.objects.filter(pk=build.revision_id, state=Revision.State.UPLOADED).update(
                state=Revision.State.BUILDING, updated_at=timezone.now()
            )
    return build


def finish_build(
    claim: Claim,
    *,
    ok: bool,
    agent_ref: str = "",
    log: str = "",
    error: str = "",
    duration_s: float | None = None,
    language: str = "",
    packages: list | tuple = (),
    image_bytes: int | None = None,
    package_notes: list | tuple = (),
    stack: str = "",
    added_bytes: int | None = None,
) -> bool:
    """Store a build's outcome (the submission's success or fault). On success the revision is BUILT, with
    its ``language``, installed ``packages`` ([name, version] pairs) and ``image_bytes`` (its image's size,
    ``None``: not an image), ``package_notes`` (sentences for its owner), the ``stack`` its image builds
    on and its ``added_bytes`` over that stack or base, and its smoke test is queued; on
    failure it is BUILD_FAILED with ``error`` for its owner. Returns
    ``False`` (and changes nothing) if the build already has an outcome or ``claim`` lost it to another
    worker (fencing)."""
    with transaction.atomic():
        build = lock_claimed(Build, claim)
        if build is None:
            return False
        now = database_time()
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
            if ok and revision.state in _REBUILT_IN_PLACE:  # a rebuild of a lost image: same zip, same code
                revision.agent_ref = agent_ref
                revision.language = language
                revision.packages = [list(p) for p in packages]
                revision.image_bytes = image_bytes
                _set_package_fields(revision, package_notes, stack, added_bytes)
                revision.save(
                    update_fields=[
                        "agent_ref",
                        "language",
                        "packages",
                        "image_bytes",
                        *_PACKAGE_FIELDS,
                        "updated_at",
                    ]
                )
            return True  # e.g. rejected meanwhile: keep the build record, leave the revision alone
        if ok:
            revision.state = Revision.State.BUILT
            revision.agent_ref = agent_ref
            revision.built_at = now
            revision.error_message = ""
            revision.language = language
            revision.packages = [list(p) for p in packages]
            revision.image_bytes = image_bytes
            _set_package_fields(revision, package_notes, stack, added_bytes)
            revision.save(
                update_fields=[
                    "state",
                    "agent_ref",
                    "built_at",
                    "error_message",
                    "language",
                    "packages",
                    "image_bytes",
                    *_PACKAGE_FIELDS,
                    "updated_at",
                ]
            )
            smoke = SmokeTest.objects.create(revision=revision, enqueued_at=now)
            enqueue_on_commit(SmokeTest.task_name, smoke.pk)
        else:
            revision.state = Revision.State.BUILD_FAILED
            revision.error_message = error or "the build failed (see the build log)"
            revision.save(update_fields=["state", "error_message", "updated_at"])
            notify_revision_failed(revision)
    return True


_PACKAGE_FIELDS = ("package_notes", "stack", "added_bytes")


def _set_package_fields(revision: Revision, notes, stack: str, added_bytes: int | None) -> None:
    revision.package_notes = [str(note) for note in notes]
    revision.stack = stack[:100]
    revision.added_bytes = added_bytes


#: Revisions whose image a rebuild replaces without changing their state (see ``rebuild_revision``).
_REBUILT_IN_PLACE = (Revision.State.BUILT, Revision.State.TESTING, Revision.State.ELIGIBLE)


def rebuild_revision(revision_id: int, reason: str) -> Build | None:
    """The revision's image is gone (deleted from the registry, lost with a machine): build it again from
    its stored zip, keeping its state; the new image replaces ``agent_ref`` when the build succeeds. A
    rebuild already queued or running is returned as is; ``None`` if the revision has no zip to build."""
    with transaction.atomic():
        revision = Revision.objects.select_for_update().get(pk=revision_id)
        active = revision.builds.filter(state__in=[Build.State.QUEUED, Build.State.RUNNING]).first()
        if active is not None or not revision.zip_path:
            return active
        build = Build.objects.create(
            revision=revision, enqueued_at=timezone.now(), failure_reason=f"rebuild: {reason}"[:2000]
        )
        enqueue_on_commit(Build.task_name, build.pk)
    return build


def fail_revision_on_our_side(
    revision_id: int, states: tuple[str, ...], failed_state: str, step: str
) -> None:
    """A job of the revision's pipeline (``step``: "build", "smoke test") ended FAILED for infrastructure
    faults: the revision, if still in one of ``states``, takes ``failed_state`` with a message saying it
    was our problem, and its owner is told (same transaction)."""
    failed = Revision.objects.filter(pk=revision_id, state__in=states).update(
        state=failed_state,
        error_message=f"The {step} could not run because of a problem on our side; it will be retried "
        "automatically, and an operator can re-queue it.",
        updated_at=timezone.now(),
    )
    if failed:
        notify_revision_failed(Revision.objects.get(pk=revision_id))


def _build_failed(build: Build) -> None:
    fail_revision_on_our_side(
        build.revision_id,
        (Revision.State.UPLOADED, Revision.State.BUILDING),
        Revision.State.BUILD_FAILED,
        "build",
    )


def fail_build(
    build_id: int,
    reason: str,
    *,
    claim: Claim | None,
    retry: bool = True,
    counted: bool = True,
    delay_s: float | None = None,
) -> bool:
    """An infrastructure failure (never the submission's fault) seen by the worker holding ``claim``, or by
    the reaper (``claim=None``, expired lease): re-queue with backoff while attempts remain, else FAILED
    and the owner is told it was our problem. Returns whether anything changed."""
    return fail_job(
        Build,
        build_id,
        reason,
        claim=claim,
        retry=retry,
        counted=counted,
        delay_s=delay_s,
        on_failed=_build_failed,
    )


def on_build_requeued(build: Build) -> None:
    """An automatic retry of a FAILED build: its revision goes back to UPLOADED (same transaction)."""
    Revision.objects.filter(pk=build.revision_id, state=Revision.State.BUILD_FAILED).update(
        state=Revision.State.UPLOADED, error_message="", updated_at=timezone.now()
    )
