"""State changes of smoke tests: claim, finish (pass/fail), infrastructure failure."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.actions.agent_data import wipe_for_playing_revision
from core.actions.builds import fail_revision_on_our_side
from core.actions.competitors import resume_after_new_revision
from core.actions.jobs import Claim, claim_job, database_time, fail_job, lock_claimed
from core.actions.notifications import notify_revision_failed
from core.models import Competitor, Revision, SmokeTest


def claim_smoke_test(
    smoke_test_id: int, worker: str | None = None, lease_s: float | None = None
) -> SmokeTest | None:
    """Claim a smoke test (``None`` if not claimable); its revision becomes TESTING."""
    with transaction.atomic():
        smoke = claim_job(
            SmokeTest, smoke_test_id, worker, lease_s, related=("revision__competitor__environment",)
        )
        if smoke is not None:
            Revision.objects.filter(pk=smoke.revision_id, state=Revision.State.BUILT).update(
                state=Revision.State.TESTING, updated_at=timezone.now()
            )
    return smoke


def finish_smoke_test(
    claim: Claim, *, passed: bool, reason: str, duel_json: dict[str, Any] | None = None, log: str = ""
) -> bool:
    """Store a smoke test's verdict. Passed: the revision is ELIGIBLE and becomes its competitor's current
    revision (if newer; the competitor's data folder is emptied then if the revision has ``wipe_data``);
    public revisions are marked for publishing. Failed: TEST_FAILED with ``reason`` and ``log`` shown to
    the owner. ``False`` if the smoke test already had a verdict or ``claim`` lost it to another worker
    (fencing)."""
    with transaction.atomic():
        smoke = lock_claimed(SmokeTest, claim)
        if smoke is None:
            return False
        now = database_time()
        smoke.state = SmokeTest.State.SUCCEEDED
        smoke.passed = passed
        smoke.reason = reason
        smoke.duel_json = duel_json
        smoke.log = log[-settings.PLAYER_LOG_MAX_CHARS :]
        smoke.finished_at = now
        smoke.lease_expires_at = None
        smoke.save(
            update_fields=["state", "passed", "reason", "duel_json", "log", "finished_at", "lease_expires_at"]
        )
        revision = Revision.objects.select_for_update().get(pk=smoke.revision_id)
        if revision.state not in (Revision.State.BUILT, Revision.State.TESTING):
            return True
        revision.tested_at = now
        if passed:
            revision.state = Revision.State.ELIGIBLE
            revision.error_message = ""
            if revision.is_public:
                revision.publish_state = Revision.PublishState.PENDING
            revision.save(
                update_fields=["state", "tested_at", "error_message", "publish_state", "updated_at"]
            )
            competitor = Competitor.objects.select_for_update().get(pk=revision.competitor_id)
            current = competitor.current_revision_id
            if current is None or Revision.objects.get(pk=current).version < revision.version:
                competitor.current_revision = revision
                competitor.save(update_fields=["current_revision"])
                wipe_for_playing_revision(competitor, revision)  # if it asked for an empty data folder
                resume_after_new_revision(competitor)
        else:
            revision.state = Revision.State.TEST_FAILED
            revision.error_message = f"smoke test failed: {reason}"
            revision.save(update_fields=["state", "tested_at", "error_message", "updated_at"])
            notify_revision_failed(revision)
    return True


def _smoke_test_failed(smoke: SmokeTest) -> None:
    fail_revision_on_our_side(
        smoke.revision_id,
        (Revision.State.BUILT, Revision.State.TESTING),
        Revision.State.TEST_FAILED,
        "smoke test",
    )


def fail_smoke_test(
    smoke_test_id: int,
    reason: str,
    *,
    claim: Claim | None,
    retry: bool = True,
    counted: bool = True,
    delay_s: float | None = None,
) -> bool:
    """An infrastructure failure during a smoke test (``claim=None``: the reaper, expired lease): re-queue
    with backoff while attempts remain, else FAILED (the revision stays un-eligible with a message saying
    it was our problem). Returns whether anything changed."""
    return fail_job(
        SmokeTest,
        smoke_test_id,
        reason,
        claim=claim,
        retry=retry,
        counted=counted,
        delay_s=delay_s,
        on_failed=_smoke_test_failed,
    )


def on_smoke_test_requeued(smoke: SmokeTest) -> None:
    """An automatic retry of a FAILED smoke test: its revision goes back to BUILT (same transaction)."""
    Revision.objects.filter(pk=smoke.revision_id, state=Revision.State.TEST_FAILED, agent_ref__gt="").update(
        state=Revision.State.BUILT, error_message="", updated_at=timezone.now()
    )
