"""The job lifecycle's guarantees, one action at a time (``core.actions.jobs``, ``core.actions.leases``,
``core.jobs``): fencing by generation, database time, backoff, uncounted attempts on an unhealthy worker,
automatic retry of failed jobs, the reaper's re-sends, the spool, typed outcomes.

Real PostgreSQL or SQLite, the real broker of the suite (in memory, or Redis / the filesystem broker where a
test says so) and the real health probe (``run_duel.health``): an unhealthy worker is one whose
``DOCKER_HOST`` points at a socket nothing listens on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from core_testlib import Hint, drain_hints, duel_json
from django.db.models.functions import Now

from core.actions import (
    Claim,
    begin_reaper_round,
    claim_build,
    claim_duel,
    claim_smoke_test,
    extend_lease,
    fail_build,
    fail_duel,
    fail_smoke_test,
    finish_build,
    finish_smoke_test,
    record_duel_result,
    requeue_duel,
    requeue_expired_leases,
    resend_stale_hints,
    retry_failed_jobs,
    schedule_duel,
)
from core.actions.jobs import backoff_seconds, db_in, seconds_until_claimable
from core.actions.play import agent_move, claim_play_session, end_play_session, save_agent_log
from core.jobs import spool
from core.jobs.runner import KINDS, InfrastructureError, JobKind, flush_spool, run_job
from core.models import (
    Build,
    Competitor,
    Duel,
    Match,
    PlaySession,
    ReaperState,
    Revision,
    SmokeTest,
    Tournament,
)
from core.queue import broker_queue_size, send_task
from core.rating_outbox import resend_rating_triggers
from run_duel.outcomes import DuelResult, ErrorKind, MatchResult

RUN_DUEL = Duel.task_name


def claimed(claim_fn: Callable[..., Any], job_id: int, worker: str = "w1") -> Claim:
    """Claim a job as a worker does; the fencing token its writes must carry."""
    job = claim_fn(job_id, worker)
    assert job is not None, f"job {job_id} could not be claimed by {worker}"
    return Claim.of(job)


def expire(model: type[Any], job_id: int) -> None:
    """End the job's lease a second ago (database time): its worker stopped sending heartbeats."""
    model.objects.filter(pk=job_id).update(lease_expires_at=db_in(-1))


def age_failure(model: type[Any], job_id: int, seconds: float) -> None:
    """Pretend the job ended FAILED ``seconds`` ago (database time)."""
    model.objects.filter(pk=job_id).update(finished_at=db_in(-seconds))


@pytest.fixture
def duel(make_revision: Callable[..., Any]) -> Duel:
    return schedule_duel(make_revision(), make_revision())


@pytest.fixture
def build(make_revision: Callable[..., Any]) -> Build:
    return Build.objects.create(revision=make_revision(state="UPLOADED", agent_ref=""))


@pytest.fixture
def smoke(make_revision: Callable[..., Any]) -> SmokeTest:
    return SmokeTest.objects.create(revision=make_revision(state="BUILT"))


@pytest.fixture
def no_backoff(settings: Any) -> None:
    """Re-queued jobs are claimable at once (tests about attempts, not about backoff)."""
    settings.RETRY_BACKOFF_SECONDS = 0


@pytest.fixture
def dead_engine(settings: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[[], None]:
    """Call it to make this worker unhealthy for real: the Docker sandbox, with ``DOCKER_HOST`` at a
    socket nothing listens on (the health probe then says the engine does not answer)."""

    def kill() -> None:
        settings.SANDBOX = "docker"
        monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")

    return kill


# --- fencing: a claim that lost its job can never write to it ----------------------------------------

# (model, claim, a successful outcome, an infrastructure failure) of each leased job kind.
KINDS_UNDER_TEST = {
    "build": (
        Build,
        claim_build,
        lambda c: finish_build(c, ok=True, agent_ref="/agents/a"),
        lambda c, **kw: fail_build(c.job_id, "engine down", claim=c, **kw),
    ),
    "smoke": (
        SmokeTest,
        claim_smoke_test,
        lambda c: finish_smoke_test(c, passed=True, reason="ok"),
        lambda c, **kw: fail_smoke_test(c.job_id, "engine down", claim=c, **kw),
    ),
    "duel": (
        Duel,
        claim_duel,
        lambda c: record_duel_result(c, duel_json()),
        lambda c, **kw: fail_duel(c.job_id, "engine down", claim=c, **kw),
    ),
}


@pytest.mark.parametrize("kind", list(KINDS_UNDER_TEST))
def test_a_stale_claims_finish_fail_and_heartbeat_are_refused_after_another_claim(
    kind: str, build: Build, smoke: SmokeTest, duel: Duel
) -> None:
    model, claim_fn, finish, fail = KINDS_UNDER_TEST[kind]
    job_id = {"build": build, "smoke": smoke, "duel": duel}[kind].pk
    stale = claimed(claim_fn, job_id, "stalled")
    expire(model, job_id)
    live = claimed(claim_fn, job_id, "live")
    assert live.generation == stale.generation + 1

    assert not extend_lease(model, stale)
    assert not fail(stale)
    assert not finish(stale)
    row = model.objects.get(pk=job_id)
    assert (row.state, row.worker, row.generation, row.failure_reason) == (
        "RUNNING",
        "live",
        live.generation,
        "",
    )
    assert not Match.objects.exists()

    assert finish(live)
    assert not finish(stale)


@pytest.mark.parametrize("kind", list(KINDS_UNDER_TEST))
def test_a_stale_heartbeat_does_not_take_back_a_job_another_claim_released(
    kind: str, build: Build, smoke: SmokeTest, duel: Duel, settings: Any
) -> None:
    settings.RETRY_BACKOFF_SECONDS = 600
    model, claim_fn, _finish, fail = KINDS_UNDER_TEST[kind]
    job_id = {"build": build, "smoke": smoke, "duel": duel}[kind].pk
    stale = claimed(claim_fn, job_id, "stalled")
    expire(model, job_id)
    live = claimed(claim_fn, job_id, "live")
    assert fail(live)  # the live worker hit an engine error: QUEUED again, backing off
    assert not extend_lease(model, stale)
    row = model.objects.get(pk=job_id)
    assert (row.state, row.worker) == ("QUEUED", "")
    assert row.not_before is not None


def test_a_stale_live_game_worker_can_neither_move_nor_end_the_game(
    make_revision: Callable[..., Any], make_user: Callable[..., Any]
) -> None:
    from core.actions.play import start_play_session

    revision = make_revision(env="tic-tac-toe")
    Competitor.objects.filter(pk=revision.competitor_id).update(current_revision=revision, is_public=True)
    session = start_play_session(make_user(), revision.competitor_id, human_first=False)
    stale = claimed(claim_play_session, session.pk, "stalled")
    expire(PlaySession, session.pk)
    live = claimed(claim_play_session, session.pk, "live")

    assert agent_move(stale, 4, 0.01) is None
    assert not end_play_session(session.pk, PlaySession.Result.FAILED, claim=stale, message="stale")
    save_agent_log(stale, "stale worker's log")
    assert not extend_lease(PlaySession, stale)
    row = PlaySession.objects.get(pk=session.pk)
    assert (row.status, row.moves, row.agent_log, row.worker) == ("PLAYING", 0, "", "live")

    assert agent_move(live, 4, 0.01) is not None
    save_agent_log(live, "live worker's log")
    assert PlaySession.objects.values_list("moves", "agent_log").get(pk=session.pk) == (
        1,
        "live worker's log",
    )


def test_a_claim_requeued_by_the_reaper_but_not_reclaimed_still_records(duel: Duel) -> None:
    claim = claimed(claim_duel, duel.pk)
    expire(Duel, duel.pk)  # its worker was cut off from the database for a lease
    assert requeue_expired_leases()["duel"] == 1
    assert Duel.objects.get(pk=duel.pk).state == "QUEUED"
    assert record_duel_result(claim, duel_json(n=3))  # nobody claimed it since: the result is real
    row = Duel.objects.get(pk=duel.pk)
    assert (row.state, row.attempts, row.generation) == ("FINISHED", 1, claim.generation)
    assert Match.objects.filter(duel=duel).count() == 3
    assert claim_duel(duel.pk, "late") is None


def test_the_heartbeat_of_a_claim_requeued_by_the_reaper_takes_the_job_back(
    duel: Duel, settings: Any
) -> None:
    settings.RETRY_BACKOFF_SECONDS = 0  # claimable at once by anyone: only the heartbeat stops that
    claim = claimed(claim_duel, duel.pk)
    expire(Duel, duel.pk)
    assert requeue_expired_leases()["duel"] == 1
    assert extend_lease(Duel, claim)
    row = Duel.objects.get(pk=duel.pk)
    assert (row.state, row.worker, row.generation, row.not_before) == (
        "RUNNING",
        "w1",
        claim.generation,
        None,
    )
    assert claim_duel(duel.pk, "other") is None  # its lease is live again
    assert record_duel_result(claim, duel_json())


def test_a_duel_failed_by_the_reaper_accepts_its_result_and_fixes_the_tournament_counters(
    make_revision: Callable[..., Any], environments: dict[str, Any], settings: Any
) -> None:
    settings.MAX_ATTEMPTS = 1
    tournament = Tournament.objects.create(
        environment=environments["tic-tac-toe"], edition=1, state="RUNNING", duels_total=1
    )
    duel = schedule_duel(make_revision(), make_revision(), kind="TOURNAMENT", tournament=tournament)
    claim = claimed(claim_duel, duel.pk)
    expire(Duel, duel.pk)
    requeue_expired_leases()  # its last attempt: FAILED, counted as failed
    assert Duel.objects.get(pk=duel.pk).state == "FAILED"
    assert Tournament.objects.values_list("duels_finished", "duels_failed").get(pk=tournament.pk) == (0, 1)

    assert record_duel_result(claim, duel_json())
    assert Duel.objects.get(pk=duel.pk).state == "FINISHED"
    assert Tournament.objects.values_list("duels_finished", "duels_failed").get(pk=tournament.pk) == (1, 0)


def test_a_failed_duel_replayed_since_refuses_the_old_claims_result(duel: Duel, settings: Any) -> None:
    settings.MAX_ATTEMPTS = 1
    old = claimed(claim_duel, duel.pk, "old")
    expire(Duel, duel.pk)
    requeue_expired_leases()
    assert requeue_duel(duel.pk)  # an operator re-queued it and another worker plays it now
    new = claimed(claim_duel, duel.pk, "new")
    assert not record_duel_result(old, duel_json(n=5))
    assert record_duel_result(new, duel_json(n=2))
    assert Match.objects.filter(duel=duel).count() == 2


# --- backoff and attempts --------------------------------------------------------------------------------


def test_backoff_grows_exponentially_with_jitter_and_a_cap(settings: Any) -> None:
    settings.RETRY_BACKOFF_SECONDS, settings.RETRY_BACKOFF_MAX_SECONDS = 5, 300
    for failures, full in [(1, 5), (2, 10), (3, 20), (6, 160), (7, 300), (20, 300)]:
        delays = [backoff_seconds(failures) for _ in range(200)]
        assert all(full / 2 <= d <= full for d in delays), (failures, min(delays), max(delays))
        assert len(set(delays)) > 1  # jittered: failures of many jobs at once do not retry in lockstep


def test_an_infrastructure_failure_backs_off_and_the_claim_waits_for_it(duel: Duel, settings: Any) -> None:
    settings.RETRY_BACKOFF_SECONDS = 600
    assert fail_duel(duel.pk, "engine down", claim=claimed(claim_duel, duel.pk))
    row = Duel.objects.get(pk=duel.pk)
    assert (row.state, row.attempts) == ("QUEUED", 1) and row.not_before is not None
    wait = seconds_until_claimable(Duel, duel.pk)
    assert wait is not None and 0 < wait <= 600
    assert claim_duel(duel.pk, "eager") is None
    assert Duel.objects.values_list("state", "attempts").get(pk=duel.pk) == ("QUEUED", 1)

    Duel.objects.filter(pk=duel.pk).update(not_before=db_in(-1))  # the backoff is over
    assert seconds_until_claimable(Duel, duel.pk) == 0
    again = claim_duel(duel.pk, "patient")
    assert again is not None and (again.attempts, again.not_before) == (2, None)


def test_a_hint_delivered_during_the_backoff_is_sent_again_for_its_end(duel: Duel, settings: Any) -> None:
    from duel_runner.tasks import run_duel

    settings.RETRY_BACKOFF_SECONDS = 600
    assert fail_duel(duel.pk, "engine down", claim=claimed(claim_duel, duel.pk))
    drain_hints()
    assert run_duel(duel.pk) == "not claimed"
    assert drain_hints() == [Hint(RUN_DUEL, [duel.pk], delayed=True)]
    assert Duel.objects.values_list("state", "attempts").get(pk=duel.pk) == ("QUEUED", 1)


def test_failures_not_counted_give_the_attempt_back(duel: Duel, settings: Any, no_backoff: None) -> None:
    settings.MAX_ATTEMPTS = 1
    for _ in range(3):  # an unhealthy worker may fail it any number of times
        assert fail_duel(duel.pk, "engine down", claim=claimed(claim_duel, duel.pk), counted=False)
        assert Duel.objects.values_list("state", "attempts").get(pk=duel.pk) == ("QUEUED", 0)
    assert Duel.objects.get(pk=duel.pk).failure_reason.count("not counted: the worker was unhealthy") == 3
    assert fail_duel(duel.pk, "engine down", claim=claimed(claim_duel, duel.pk))  # a healthy worker's
    assert Duel.objects.values_list("state", "attempts").get(pk=duel.pk) == ("FAILED", 1)


def test_an_unhealthy_worker_takes_no_job_and_hands_the_hint_back(
    duel: Duel, dead_engine: Callable[[], None]
) -> None:
    from duel_runner.tasks import run_duel

    dead_engine()
    drain_hints()
    assert run_duel(duel.pk) == "worker unhealthy"
    row = Duel.objects.get(pk=duel.pk)
    assert (row.state, row.attempts, row.generation, row.worker) == ("QUEUED", 0, 0, "")
    assert drain_hints() == [Hint(RUN_DUEL, [duel.pk], delayed=True)]


@pytest.fixture
def engine_lost_mid_job(monkeypatch: pytest.MonkeyPatch, dead_engine: Callable[[], None]) -> JobKind[Duel]:
    """A duel kind whose work loses the Docker engine halfway (healthy when it claimed, unhealthy when
    the error comes back), declared like the real kinds and removed from the registry afterwards."""

    def work(duel: Duel, claim: Claim) -> dict[str, Any]:
        dead_engine()
        raise InfrastructureError("the Docker engine went away during the duel")

    monkeypatch.setitem(KINDS, "duel_engine_lost", None)
    return JobKind(
        name="duel_engine_lost",
        model=Duel,
        claim=claim_duel,
        work=work,
        record=record_duel_result,
        fail=fail_duel,
    )


def test_an_error_on_a_worker_that_turns_out_unhealthy_is_not_counted(
    duel: Duel, engine_lost_mid_job: JobKind[Duel], settings: Any
) -> None:
    settings.MAX_ATTEMPTS = 1
    assert run_job(engine_lost_mid_job, duel.pk) == "infrastructure error"
    row = Duel.objects.get(pk=duel.pk)
    assert (row.state, row.attempts) == ("QUEUED", 0)
    assert "this worker is unhealthy: the Docker engine" in row.failure_reason
    assert "not counted" in row.failure_reason


def test_an_error_on_a_healthy_worker_is_counted(make_revision: Callable[..., Any], settings: Any) -> None:
    from duel_runner.tasks import run_duel

    settings.MAX_ATTEMPTS = 1
    duel = schedule_duel(make_revision(agent_ref="/nonexistent/a"), make_revision(agent_ref="/nonexistent/b"))
    assert run_duel(duel.pk) == "infrastructure error"  # its agents cannot start; the sandbox is fine
    row = Duel.objects.get(pk=duel.pk)
    assert (row.state, row.attempts) == ("FAILED", 1)
    assert "not counted" not in row.failure_reason


# --- automatic retry of jobs FAILED for infrastructure faults -------------------------------------------


def test_a_failed_duel_is_retried_after_failed_retry_seconds_doubling_each_round(
    duel: Duel, settings: Any, no_backoff: None
) -> None:
    settings.MAX_ATTEMPTS, settings.FAILED_RETRY_SECONDS, settings.FAILED_RETRY_ROUNDS = 1, 60, 2
    for round_, due_after in enumerate([60, 120]):
        assert fail_duel(duel.pk, "registry down", claim=claimed(claim_duel, duel.pk))
        assert Duel.objects.get(pk=duel.pk).state == "FAILED"
        age_failure(Duel, duel.pk, due_after - 5)
        assert retry_failed_jobs()["duel"] == 0
        age_failure(Duel, duel.pk, due_after + 5)
        assert retry_failed_jobs()["duel"] == 1
        row = Duel.objects.get(pk=duel.pk)
        assert (row.state, row.attempts, row.retry_rounds) == ("QUEUED", 0, round_ + 1)
    assert fail_duel(duel.pk, "registry down", claim=claimed(claim_duel, duel.pk))
    age_failure(Duel, duel.pk, 10_000)
    assert retry_failed_jobs()["duel"] == 0  # FAILED_RETRY_ROUNDS used up: an operator decides now
    assert Duel.objects.get(pk=duel.pk).state == "FAILED"


def test_a_failed_tournament_duel_retried_is_no_longer_counted_as_failed(
    make_revision: Callable[..., Any], environments: dict[str, Any], settings: Any
) -> None:
    settings.MAX_ATTEMPTS, settings.FAILED_RETRY_SECONDS = 1, 60
    tournament = Tournament.objects.create(environment=environments["tic-tac-toe"], edition=1, duels_total=1)
    duel = schedule_duel(make_revision(), make_revision(), kind="TOURNAMENT", tournament=tournament)
    fail_duel(duel.pk, "registry down", claim=claimed(claim_duel, duel.pk))
    assert Tournament.objects.get(pk=tournament.pk).duels_failed == 1
    age_failure(Duel, duel.pk, 61)
    assert retry_failed_jobs()["duel"] == 1
    assert Tournament.objects.get(pk=tournament.pk).duels_failed == 0


def test_a_failed_duel_of_a_rejected_revision_is_not_retried(duel: Duel, settings: Any) -> None:
    settings.MAX_ATTEMPTS, settings.FAILED_RETRY_SECONDS = 1, 60
    fail_duel(duel.pk, "registry down", claim=claimed(claim_duel, duel.pk))
    Revision.objects.filter(pk=duel.revision_2_id).update(state="REJECTED")
    age_failure(Duel, duel.pk, 10_000)
    assert retry_failed_jobs()["duel"] == 0


def test_a_build_failed_by_our_side_is_retried_but_never_one_failed_by_its_submission(
    make_revision: Callable[..., Any], settings: Any
) -> None:
    settings.MAX_ATTEMPTS, settings.FAILED_RETRY_SECONDS = 1, 60
    ours = Build.objects.create(revision=make_revision(state="UPLOADED", agent_ref=""))
    theirs = Build.objects.create(revision=make_revision(state="UPLOADED", agent_ref=""))
    assert fail_build(ours.pk, "registry down", claim=claimed(claim_build, ours.pk))
    assert finish_build(claimed(claim_build, theirs.pk), ok=False, error="requirements.txt: no such package")
    assert set(Build.objects.values_list("state", flat=True)) == {"FAILED"}
    assert set(Revision.objects.values_list("state", flat=True)) == {"BUILD_FAILED"}
    for build in (ours, theirs):
        age_failure(Build, build.pk, 10_000)

    assert retry_failed_jobs()["build"] == 1
    assert Build.objects.values_list("state", "retry_rounds").get(pk=ours.pk) == ("QUEUED", 1)
    assert Revision.objects.get(pk=ours.revision_id).state == "UPLOADED"
    assert Build.objects.get(pk=theirs.pk).state == "FAILED"
    assert Revision.objects.get(pk=theirs.revision_id).state == "BUILD_FAILED"
    assert retry_failed_jobs()["build"] == 0


def test_a_failed_smoke_test_is_retried_and_its_revision_waits_for_it_again(
    smoke: SmokeTest, settings: Any
) -> None:
    settings.MAX_ATTEMPTS, settings.FAILED_RETRY_SECONDS = 1, 60
    assert fail_smoke_test(smoke.pk, "engine down", claim=claimed(claim_smoke_test, smoke.pk))
    assert Revision.objects.get(pk=smoke.revision_id).state == "TEST_FAILED"
    age_failure(SmokeTest, smoke.pk, 61)
    assert retry_failed_jobs()["smoketest"] == 1
    assert SmokeTest.objects.get(pk=smoke.pk).state == "QUEUED"
    assert Revision.objects.get(pk=smoke.revision_id).state == "BUILT"


# --- the reaper: rating triggers, hints, lease reaping after a long gap ------------------------------


def test_finished_unrated_duels_get_their_rating_trigger_sent_again(
    make_revision: Callable[..., Any], settings: Any
) -> None:
    settings.RATING_TASK_NAME = "tournament_manager.rate_environment"
    lost = schedule_duel(make_revision(), make_revision())
    rated = schedule_duel(make_revision(env="connect-four"), make_revision(env="connect-four"))
    fresh = schedule_duel(make_revision(env="quarto"), make_revision(env="quarto"))
    for duel in (lost, rated, fresh):
        assert record_duel_result(claimed(claim_duel, duel.pk), duel_json())
    Duel.objects.filter(pk=rated.pk).update(rated=True)
    Duel.objects.filter(pk__in=[lost.pk, rated.pk]).update(finished_at=db_in(-600))
    drain_hints()
    assert resend_rating_triggers() == 1
    assert drain_hints() == [Hint(settings.RATING_TASK_NAME, [lost.environment_id], delayed=False)]
    assert resend_rating_triggers(min_age_s=0) == 2  # the fresh one too, once it is old enough
    settings.RATING_TASK_NAME = ""
    assert resend_rating_triggers() == 0


def test_stale_hints_are_resent_even_while_the_broker_queue_holds_other_messages(
    make_revision: Callable[..., Any], broker: Any, settings: Any
) -> None:
    settings.RETRY_BACKOFF_SECONDS = 600
    lost = schedule_duel(make_revision(), make_revision())
    backing_off = schedule_duel(make_revision(), make_revision())
    fail_duel(backing_off.pk, "engine down", claim=claimed(claim_duel, backing_off.pk))
    for other in range(5):  # a busy broker: hints of other work wait in the queue
        send_task(RUN_DUEL, 10_000_000 + other)
    assert (broker_queue_size() or 0) >= 5
    Duel.objects.filter(pk__in=[lost.pk, backing_off.pk]).update(enqueued_at=db_in(-3600))

    assert resend_stale_hints()["duel"] == 1  # not the one backing off: its hint comes when it may run
    hints = [h for h in drain_hints() if h.args[0] < 10_000_000]
    assert hints == [Hint(RUN_DUEL, [lost.pk], delayed=False)]
    assert resend_stale_hints()["duel"] == 0  # its hint is fresh again


def test_jobs_out_of_attempts_get_no_hint(duel: Duel, settings: Any) -> None:
    Duel.objects.filter(pk=duel.pk).update(attempts=settings.MAX_ATTEMPTS, enqueued_at=db_in(-3600))
    assert resend_stale_hints()["duel"] == 0


def test_after_a_long_gap_the_reaper_leaves_expired_leases_for_one_lease(duel: Duel, settings: Any) -> None:
    from duel_runner.reaper import reap

    assert begin_reaper_round() and begin_reaper_round()  # rounds in a row: leases are reaped
    claim = claimed(claim_duel, duel.pk)
    expire(Duel, duel.pk)
    gap = max(3 * settings.REAPER_INTERVAL_SECONDS, settings.LEASE_SECONDS)
    ReaperState.objects.filter(pk=1).update(last_round_at=db_in(-(gap + 60)))  # the database was down

    assert reap()["expired"] == {}
    assert not begin_reaper_round()  # still paused on the next round
    assert Duel.objects.values_list("state", "generation").get(pk=duel.pk) == ("RUNNING", claim.generation)
    assert extend_lease(Duel, claim)  # the cut-off worker is back in time: its duel is still its own

    expire(Duel, duel.pk)
    ReaperState.objects.filter(pk=1).update(leases_paused_until=db_in(-1))  # the pause is over
    assert reap()["expired"]["duel"] == 1
    assert Duel.objects.get(pk=duel.pk).state == "QUEUED"


# --- the spool: outcomes kept on disk while the database is away ---------------------------------------


def test_a_spooled_outcome_is_recorded_once(duel: Duel, data_dir: Path) -> None:
    import duel_runner.tasks  # noqa: F401  (declares the duel kind the spool names)

    claim = claimed(claim_duel, duel.pk)
    path = spool.put("duel", claim, duel_json(n=3))
    assert path.parent == data_dir / "spool" and path.exists()
    [entry] = spool.pending()
    assert (entry.kind, entry.claim, entry.outcome["num_matches"]) == ("duel", claim, 3)

    assert flush_spool() == 1
    assert Duel.objects.get(pk=duel.pk).state == "FINISHED"
    assert Match.objects.filter(duel=duel).count() == 3
    assert list(spool.pending()) == [] and not path.exists()

    spool.put("duel", claim, duel_json(n=3))  # the same outcome spooled twice (a retried write)
    assert flush_spool() == 0  # refused: it is already recorded
    assert list(spool.pending()) == []
    assert Match.objects.filter(duel=duel).count() == 3


def test_a_spooled_outcome_of_a_claim_that_lost_its_job_is_dropped(duel: Duel, settings: Any) -> None:
    import duel_runner.tasks  # noqa: F401

    stale = claimed(claim_duel, duel.pk, "cut-off")
    expire(Duel, duel.pk)
    live = claimed(claim_duel, duel.pk, "live")
    spool.put("duel", stale, duel_json(n=5))
    assert flush_spool() == 0
    assert list(spool.pending()) == []
    assert record_duel_result(live, duel_json(n=2))
    assert Match.objects.filter(duel=duel).count() == 2


def test_an_unreadable_spool_file_is_moved_aside_not_lost(data_dir: Path, db: Any) -> None:
    folder = data_dir / "spool"
    folder.mkdir()
    broken = folder / "duel-1-1.json"
    broken.write_text("{not json")
    assert list(spool.pending()) == []
    assert not broken.exists() and (folder / "duel-1-1.unreadable").read_text() == "{not json"


# --- typed outcomes ------------------------------------------------------------------------------------


def test_typed_outcomes_serialize_as_the_plain_strings_of_the_format() -> None:
    typed = {"result": DuelResult.PLAYER_2_WIN, "match": MatchResult.OTHER_ERROR, "kind": ErrorKind.TIMEOUT}
    plain = {"result": "PLAYER_2_WIN", "match": "OTHER_ERROR", "kind": "TIMEOUT"}
    assert json.dumps(typed) == json.dumps(plain)
    assert orjson.dumps(typed) == orjson.dumps(plain)
    assert all(type(v) is str for v in json.loads(json.dumps(typed)).values())
    assert set(Duel.Result.values) == {r.value for r in DuelResult}
    assert set(Match.Result.values) == {r.value for r in MatchResult}


def test_a_typed_duel_json_is_stored_as_plain_strings(duel: Duel, make_revision: Callable[..., Any]) -> None:
    outcome = duel_json(n=1)
    outcome["matches"][0].update(result=MatchResult.PLAYER_2_ERROR, error_kind=ErrorKind.TIMEOUT)
    assert record_duel_result(claimed(claim_duel, duel.pk), outcome)
    stored = Duel.objects.get(pk=duel.pk)
    match = Match.objects.get(duel=duel)
    assert (stored.result, match.result, match.error_kind) == ("PLAYER_1_WIN", "PLAYER_2_ERROR", "TIMEOUT")
    assert type(stored.result) is str and type(match.error_kind) is str

    smoke = SmokeTest.objects.create(revision=make_revision(state="BUILT"))
    assert finish_smoke_test(claimed(claim_smoke_test, smoke.pk), passed=False, reason="x", duel_json=outcome)
    saved = SmokeTest.objects.get(pk=smoke.pk).duel_json
    assert saved["result"] == "PLAYER_1_WIN" and saved["matches"][0]["error_kind"] == "TIMEOUT"
    assert type(saved["matches"][0]["result"]) is str


def test_a_result_outside_the_vocabulary_is_refused(duel: Duel) -> None:
    claim = claimed(claim_duel, duel.pk)
    with pytest.raises(ValueError, match="bad result"):
        record_duel_result(claim, duel_json(result="PLAYER_3_WIN"))
    assert Duel.objects.get(pk=duel.pk).state == "RUNNING"


# --- a result in hand while the database is away keeps its claim -------------------------------------


class DatabaseOutage:
    """Makes the test database refuse every connection (``ALLOW_CONNECTIONS false``, open backends
    terminated) until :meth:`end`; PostgreSQL only. Driven from the ``postgres`` maintenance database."""

    def __init__(self) -> None:
        from django.db import connection

        settings_dict = connection.settings_dict
        self.name = settings_dict["NAME"]
        self.admin = {
            "host": settings_dict["HOST"] or "127.0.0.1",
            "port": settings_dict["PORT"] or 5432,
            "user": settings_dict["USER"],
            "dbname": "postgres",
            "autocommit": True,
        }
        if settings_dict["PASSWORD"]:
            self.admin["password"] = settings_dict["PASSWORD"]

    def _run(self, *statements: tuple[str, list[Any]]) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(**self.admin) as admin:
            for statement, params in statements:
                admin.execute(sql.SQL(statement).format(db=sql.Identifier(self.name)), params)

    def begin(self) -> None:
        self._run(
            ("ALTER DATABASE {db} WITH ALLOW_CONNECTIONS false", []),
            (
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                "AND pid <> pg_backend_pid()",
                [self.name],
            ),
        )

    def end(self) -> None:
        self._run(("ALTER DATABASE {db} WITH ALLOW_CONNECTIONS true", []))


@pytest.mark.django_db(transaction=True)
def test_a_result_waiting_for_the_database_keeps_its_claim_alive(
    make_revision: Callable[..., Any], settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker has the played result when PostgreSQL goes away; it retries storing it. Once the database
    is back, its heartbeat must renew the lease before a reaper round can hand the duel to another worker
    (which would throw the result away). The worker's retries are paced by the test (its sleeps wait for
    a go), so the reaper and a rival worker act exactly in the gap between the database's return and the
    worker's next retry."""
    import threading
    import time

    from core_testlib import is_postgres, wait_for
    from django.db import connection

    if not is_postgres():
        pytest.skip("making the database refuse connections needs PostgreSQL")
    settings.LEASE_SECONDS, settings.HEARTBEAT_SECONDS = 4, 0.2
    settings.DB_SAVE_RETRIES, settings.RETRY_BACKOFF_SECONDS = 50, 0
    duel = schedule_duel(make_revision(), make_revision())
    outage = DatabaseOutage()
    retry_pending, go_on = threading.Event(), threading.Event()
    real_sleep = time.sleep
    worker: dict[str, Any] = {}

    def paced_sleep(seconds: float) -> None:  # only the worker's retries wait for the test
        if threading.current_thread() is worker.get("thread"):
            retry_pending.set()
            assert go_on.wait(60), "the test never let the worker retry"
        else:
            real_sleep(seconds)

    def play(duel: Duel, claim: Claim) -> dict[str, Any]:
        worker["claim"] = claim
        outage.begin()  # the duel is played; now the database goes away
        return duel_json(n=3)

    monkeypatch.setattr("core.db.time.sleep", paced_sleep)
    monkeypatch.setitem(KINDS, "duel_outage", None)
    kind = JobKind(
        name="duel_outage", model=Duel, claim=claim_duel, work=play, record=record_duel_result, fail=fail_duel
    )

    def run() -> None:
        try:
            worker["result"] = run_job(kind, duel.pk)
        except BaseException as exc:  # reported by the main thread
            worker["error"] = exc
        finally:
            connection.close()

    connection.close()
    worker["thread"] = threading.Thread(target=run, daemon=True)
    try:
        worker["thread"].start()
        assert retry_pending.wait(60), "the worker never tried to store its result"
    finally:
        outage.end()
    connection.close()  # this thread's connection was terminated by the outage
    back_at = Duel.objects.annotate(now=Now()).values_list("now", flat=True).get(pk=duel.pk)

    def lease_decided() -> str | None:
        """'renewed' once a heartbeat got through after the outage, 'expired' once the lease ended."""
        row = (
            Duel.objects.annotate(now=Now()).values("now", "lease_expires_at", "heartbeat_at").get(pk=duel.pk)
        )
        if row["heartbeat_at"] > back_at and row["lease_expires_at"] > row["now"]:
            return "renewed"
        return "expired" if row["lease_expires_at"] <= row["now"] else None

    try:
        decided = wait_for(lease_decided, 6 * settings.LEASE_SECONDS, "the lease to be renewed or to end")
        requeue_expired_leases()  # a reaper round now
        rival = claim_duel(duel.pk, "rival")  # and another worker's delivery of the same duel
    finally:
        go_on.set()  # the worker's next retry
    worker["thread"].join(60)
    assert not worker["thread"].is_alive() and "error" not in worker, worker.get("error")
    assert decided == "renewed", "the lease ended while the worker held the played result"
    assert rival is None
    assert worker["result"] == "recorded"
    row = Duel.objects.get(pk=duel.pk)
    assert (row.state, row.generation) == ("FINISHED", worker["claim"].generation)
    assert Match.objects.filter(duel=duel).count() == 3
