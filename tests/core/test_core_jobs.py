"""Claims, leases, results and infrastructure failures of builds, smoke tests and duels."""

from datetime import timedelta

import pytest
from core_testlib import duel_json, is_postgres
from django.db import connection
from django.utils import timezone

from core.actions import (
    ActionError,
    Claim,
    claim_build,
    claim_duel,
    claim_smoke_test,
    extend_lease,
    fail_duel,
    finish_build,
    finish_smoke_test,
    record_duel_result,
    requeue_duel,
    requeue_expired_leases,
    resend_stale_hints,
    schedule_duel,
)
from core.actions.jobs import db_in
from core.models import Build, Duel, Match, Revision, SmokeTest


@pytest.fixture
def duel(make_revision):
    return schedule_duel(make_revision(), make_revision())


@pytest.fixture
def build(make_revision):
    revision = make_revision(state="UPLOADED", agent_ref="")
    return Build.objects.create(revision=revision, enqueued_at=timezone.now())


def expire(job):
    """End the job's lease one second ago (database time), as if its worker stopped sending heartbeats."""
    type(job).objects.filter(pk=job.pk).update(lease_expires_at=db_in(-1))


def claimed(claim_fn, job_id, worker="w1"):
    """Claim a job the way a worker does; returns the fencing token its writes must carry."""
    job = claim_fn(job_id, worker)
    assert job is not None, f"job {job_id} could not be claimed"
    return Claim.of(job)


def running_smoke_test(revision):
    """A smoke test of ``revision``, claimed by worker w1."""
    return claimed(claim_smoke_test, SmokeTest.objects.create(revision=revision).pk)


def test_a_queued_build_is_claimed_once(build):
    first = claim_build(build.pk, "w1")
    assert first is not None and first.state == "RUNNING" and first.attempts == 1
    assert claim_build(build.pk, "w2") is None
    assert Revision.objects.get(pk=build.revision_id).state == "BUILDING"


def test_a_running_build_with_an_expired_lease_can_be_claimed_again(build):
    claim_build(build.pk, "w1")
    expire(build)
    again = claim_build(build.pk, "w2")
    assert (again.worker, again.attempts) == ("w2", 2)


def test_a_stale_claimer_cannot_extend_a_lease_it_lost(build):
    first = claimed(claim_build, build.pk, "w1")
    expire(build)
    second = claimed(claim_build, build.pk, "w2")
    assert second.generation == first.generation + 1
    assert not extend_lease(Build, first)
    assert extend_lease(Build, second)
    assert Build.objects.values_list("worker", "state").get(pk=build.pk) == ("w2", "RUNNING")


def test_successful_build_makes_the_revision_built_and_queues_its_smoke_test(build):
    claim = claimed(claim_build, build.pk)
    assert finish_build(claim, ok=True, agent_ref="/agents/abc", log="ok", duration_s=0.5)
    revision = Revision.objects.get(pk=build.revision_id)
    assert (revision.state, revision.agent_ref) == ("BUILT", "/agents/abc")
    assert SmokeTest.objects.get(revision=revision).state == "QUEUED"


def test_failed_build_shows_the_error_to_the_owner(build):
    claim = claimed(claim_build, build.pk)
    finish_build(claim, ok=False, error="requirements.txt: no such package 'nope'", log="pip output")
    revision = Revision.objects.get(pk=build.revision_id)
    assert revision.state == "BUILD_FAILED"
    assert "no such package" in revision.error_message
    assert not SmokeTest.objects.exists()


def test_a_second_build_outcome_is_ignored(build):
    claim = claimed(claim_build, build.pk)
    assert finish_build(claim, ok=True, agent_ref="/a")
    assert not finish_build(claim, ok=False, error="late duplicate")
    assert Build.objects.get(pk=build.pk).state == "SUCCEEDED"


def test_passing_smoke_test_makes_the_revision_eligible_and_current(make_revision):
    revision = make_revision(state="BUILT")
    claim = running_smoke_test(revision)
    assert Revision.objects.get(pk=revision.pk).state == "TESTING"
    assert finish_smoke_test(claim, passed=True, reason="4 matches without errors")
    revision.refresh_from_db()
    assert revision.state == "ELIGIBLE"
    assert revision.competitor.current_revision_id == revision.pk


def test_failing_smoke_test_keeps_the_reason_and_log(make_revision):
    revision = make_revision(state="TESTING")
    claim = running_smoke_test(revision)
    finish_smoke_test(claim, passed=False, reason="match 1: INVALID_ACTION: 42", log="Traceback ...")
    revision.refresh_from_db()
    assert revision.state == "TEST_FAILED"
    assert "INVALID_ACTION" in revision.error_message
    assert SmokeTest.objects.get(pk=claim.job_id).log == "Traceback ..."


def test_public_revision_is_marked_for_publishing_once_eligible(make_revision):
    revision = make_revision(state="TESTING", is_public=True)
    finish_smoke_test(running_smoke_test(revision), passed=True, reason="ok")
    assert Revision.objects.get(pk=revision.pk).publish_state == "PENDING"


def test_duels_need_eligible_revisions(make_revision):
    with pytest.raises(ActionError, match="not ELIGIBLE"):
        schedule_duel(make_revision(), make_revision(state="BUILT"))


def test_duels_need_one_environment(make_revision):
    with pytest.raises(ActionError, match="different environments"):
        schedule_duel(make_revision(env="tic-tac-toe"), make_revision(env="connect-four"))


def test_recording_a_result_stores_the_summary_and_every_match(duel):
    claim = claimed(claim_duel, duel.pk)
    assert record_duel_result(claim, duel_json(n=3))
    duel.refresh_from_db()
    assert (duel.state, duel.result, duel.player_1_wins, duel.player_1_log) == (
        "FINISHED",
        "PLAYER_1_WIN",
        3,
        "p1 log",
    )
    assert list(duel.matches.values_list("index", flat=True)) == [0, 1, 2]


def test_a_result_for_a_finished_duel_is_ignored(duel):
    claim = claimed(claim_duel, duel.pk)
    assert record_duel_result(claim, duel_json(n=2))
    assert not record_duel_result(claim, duel_json(n=5, result="PLAYER_2_WIN"))
    assert Match.objects.filter(duel=duel).count() == 2
    assert Duel.objects.get(pk=duel.pk).result == "PLAYER_1_WIN"


def test_a_finished_duel_cannot_be_claimed(duel):
    assert record_duel_result(claimed(claim_duel, duel.pk), duel_json())
    assert claim_duel(duel.pk, "w2") is None


def test_infrastructure_failure_requeues_the_duel_without_a_result(duel):
    claim = claimed(claim_duel, duel.pk)
    assert fail_duel(duel.pk, "docker engine restarting", claim=claim)
    duel.refresh_from_db()
    assert (duel.state, duel.result, duel.worker, duel.attempts) == ("QUEUED", "", "", 1)
    assert "docker engine restarting" in duel.failure_reason
    assert duel.not_before is not None  # it backs off before the next attempt


def test_a_duel_fails_for_good_after_max_attempts(duel, settings):
    settings.MAX_ATTEMPTS = 2
    settings.RETRY_BACKOFF_SECONDS = 0  # claimable again at once
    for _ in range(2):
        assert fail_duel(duel.pk, "sandbox error", claim=claimed(claim_duel, duel.pk))
    duel.refresh_from_db()
    assert (duel.state, duel.attempts, duel.rated) == ("FAILED", 2, False)
    assert claim_duel(duel.pk, "w") is None


def test_an_operator_can_requeue_a_failed_duel(duel, settings):
    settings.MAX_ATTEMPTS = 1
    fail_duel(duel.pk, "sandbox error", claim=claimed(claim_duel, duel.pk))
    assert Duel.objects.get(pk=duel.pk).state == "FAILED"
    assert requeue_duel(duel.pk)
    assert claim_duel(duel.pk, "w").attempts == 1


def test_expired_leases_are_requeued_and_live_ones_left_alone(duel, make_revision):
    live = schedule_duel(make_revision(), make_revision())
    claim_duel(duel.pk, "dead-worker")
    claim_duel(live.pk, "live-worker")
    expire(duel)
    assert requeue_expired_leases()["duel"] == 1
    requeued = Duel.objects.get(pk=duel.pk)
    assert (requeued.state, requeued.attempts) == ("QUEUED", 1)
    assert "no heartbeat for a lease" in requeued.failure_reason
    assert Duel.objects.get(pk=live.pk).state == "RUNNING"


@pytest.mark.django_db(transaction=True)
def test_the_reaper_skips_a_row_another_transaction_holds_and_takes_it_next_round(make_revision):
    """A frozen worker's open transaction must not stop the reaper: it skips that row (a lock wait would
    hold up every re-queue behind it) and re-queues it once the lock is given back."""
    if not is_postgres():
        pytest.skip("row locks held by another session need PostgreSQL")
    import psycopg

    held, free = (schedule_duel(make_revision(), make_revision()) for _ in range(2))
    for job in (held, free):
        claim_duel(job.pk, "frozen-worker")
        expire(job)
    db = connection.settings_dict
    other = psycopg.connect(
        dbname=db["NAME"], user=db["USER"], password=db["PASSWORD"], host=db["HOST"], port=db["PORT"] or 5432
    )
    try:
        # A transaction left open on the row, as a worker frozen between its lock and its write leaves it.
        other.execute("SELECT id FROM core_duel WHERE id = %s FOR UPDATE", [held.pk])
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '60s'")  # a reaper that waited would fail here, not hang
        assert requeue_expired_leases()["duel"] == 1
        assert Duel.objects.get(pk=free.pk).state == "QUEUED"
        assert Duel.objects.get(pk=held.pk).state == "RUNNING"
    finally:
        other.rollback()
        other.close()
    assert requeue_expired_leases()["duel"] == 1
    assert Duel.objects.get(pk=held.pk).state == "QUEUED"


def test_expired_build_lease_gives_up_after_max_attempts(build, settings):
    settings.MAX_ATTEMPTS = 1
    claim_build(build.pk, "dead-worker")
    expire(build)
    requeue_expired_leases()
    assert Build.objects.get(pk=build.pk).state == "FAILED"
    revision = Revision.objects.get(pk=build.revision_id)
    assert revision.state == "BUILD_FAILED" and "our side" in revision.error_message


def test_lost_hints_are_resent_and_their_hint_time_renewed(duel, settings):
    Duel.objects.filter(pk=duel.pk).update(enqueued_at=timezone.now() - timedelta(hours=1))
    assert resend_stale_hints()["duel"] == 1
    assert Duel.objects.get(pk=duel.pk).enqueued_at > timezone.now() - timedelta(minutes=1)
    assert resend_stale_hints()["duel"] == 0  # renewed: not re-sent every round


def test_fresh_hints_are_not_resent(duel):
    assert resend_stale_hints()["duel"] == 0
