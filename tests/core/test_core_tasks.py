"""The Celery task functions run in this process: pipeline, duels, duplicate and late deliveries, a
database connection lost while saving a result."""

import dataclasses
import threading
import time

import pytest

from core.jobs.runner import KINDS
from core.models import Build, Duel, Match, SmokeTest
from duel_runner import tasks as duel_tasks
from duel_runner.tasks import run_duel

# Tasks commit like in production (and the heartbeat thread must not wait on the test's transaction).
pytestmark = pytest.mark.django_db(transaction=True)


def test_uploaded_random_player_is_built_smoke_tested_and_eligible(eligible):
    revision = eligible("random")
    assert revision.state == "ELIGIBLE", revision.error_message
    assert Build.objects.get(revision=revision).state == "SUCCEEDED"
    smoke = SmokeTest.objects.get(revision=revision)
    assert smoke.passed and len(smoke.duel_json["matches"]) == 4
    assert revision.competitor.current_revision_id == revision.pk


def test_player_making_illegal_moves_fails_its_smoke_test_with_the_reason(eligible):
    revision = eligible("broken/illegal_action")
    assert revision.state == "TEST_FAILED"
    assert "INVALID_ACTION" in revision.error_message
    assert revision.competitor.current_revision_id is None


def test_player_crashing_at_import_fails_its_smoke_test_with_its_traceback(eligible):
    revision = eligible("broken/crash_at_import")
    assert revision.state == "TEST_FAILED"
    smoke = SmokeTest.objects.get(revision=revision)
    assert smoke.passed is False and smoke.reason


def test_duel_between_minimax_and_random_is_played_and_recorded(eligible, environments):
    strong, weak = eligible("minimax"), eligible("random")
    from core.actions import schedule_duel

    duel = schedule_duel(strong, weak)
    assert run_duel(duel.pk) == "recorded"
    duel.refresh_from_db()
    assert duel.state == "FINISHED" and duel.other_errors == 0
    assert duel.matches.count() == environments["tic-tac-toe"].matches_per_duel
    assert duel.player_1_wins > duel.player_2_wins


def test_an_agent_reads_in_its_next_duel_what_it_wrote_in_its_data_folder(make_user, environments):
    """End to end through the real sandbox: upload, build, smoke test (a scratch folder), two ladder duels
    that each read the folder the last one saved; the opponent's folder never holds any of it."""
    import io
    import tarfile

    from core_testlib import EXAMPLES, run_pipeline_inline, zip_player

    from core.actions import load_agent_data, schedule_duel, submit_revision
    from core.management.commands.load_example_players import zip_folder

    def files(archive):
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            return {m.name: tar.extractfile(m).read() for m in tar if m.isreg()}

    agent = EXAMPLES.parent / "tests" / "run_duel" / "agents" / "data_agent"
    keeper = run_pipeline_inline(submit_revision(make_user(), "tic-tac-toe", "keeper", zip_folder(agent)))
    other = run_pipeline_inline(submit_revision(make_user(), "tic-tac-toe", "other", zip_player("random")))
    assert keeper.state == other.state == "ELIGIBLE", keeper.error_message
    assert load_agent_data(keeper.competitor_id) == (b"", 0)  # the smoke test's folder was scratch
    for number in (1, 2):
        duel = schedule_duel(keeper, other)
        assert run_duel(duel.pk) == "recorded"
        duel.refresh_from_db()
        assert duel.player_1_errors == duel.other_errors == 0, duel.error_msg
        assert f"started with {number - 1}" in duel.player_1_log
        archive, generation = load_agent_data(keeper.competitor_id)
        assert files(archive)["duels.txt"] == str(number).encode() and generation == number
    assert load_agent_data(other.competitor_id)[0] == b""


@pytest.mark.django_db(transaction=True)
def test_result_is_saved_after_the_database_connection_is_lost(eligible, monkeypatch):
    """The first save hits a connection Postgres has just terminated; the task reconnects and retries."""
    from core_testlib import is_postgres
    from django.db import connection

    from core.actions import schedule_duel

    if not is_postgres():
        pytest.skip("terminating a backend connection needs PostgreSQL")
    import psycopg

    duel = schedule_duel(eligible("random", name="a"), eligible("random", name="b"), num_matches=2)
    real_record = duel_tasks.DUEL.record
    calls = []

    def record_after_outage(claim, result):
        calls.append(claim.job_id)
        if len(calls) == 1:
            connection.ensure_connection()
            pid = connection.connection.info.backend_pid
            s = connection.settings_dict
            with psycopg.connect(
                host=s["HOST"], port=s["PORT"] or 5432, user=s["USER"], dbname=s["NAME"]
            ) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", [pid])
        return real_record(claim, result)

    # The duel kind with its recording wrapped (declaring a kind registers it: restore the real one after).
    monkeypatch.setitem(KINDS, "duel", duel_tasks.DUEL)
    monkeypatch.setattr(duel_tasks, "DUEL", dataclasses.replace(duel_tasks.DUEL, record=record_after_outage))
    monkeypatch.setattr("core.db.time.sleep", lambda s: None)
    assert run_duel(duel.pk) == "recorded"
    assert calls == [duel.pk, duel.pk]
    assert Duel.objects.get(pk=duel.pk).state == "FINISHED"
    assert Match.objects.filter(duel=duel).count() == 2


def test_a_duel_that_cannot_start_on_our_side_is_requeued_without_charging_anyone(make_revision):
    from core.actions import schedule_duel

    duel = schedule_duel(
        make_revision(agent_ref="/nonexistent/agent"), make_revision(agent_ref="/nonexistent/b")
    )
    assert run_duel(duel.pk) == "infrastructure error"
    duel.refresh_from_db()
    assert (duel.state, duel.attempts, duel.result) == ("QUEUED", 1, "")
    assert duel.failure_reason
    assert not Match.objects.filter(duel=duel).exists()


SLOW_PLAYER = """
import time


class Player:
    def __init__(self, train_mode=False):
        pass

    def start(self, state, valid_actions):
        time.sleep(0.4)
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        time.sleep(0.4)
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
"""


def slow_eligible_revision(make_user):
    """A revision whose every move takes 0.4 s, built for real but declared eligible without self-play."""
    import io
    import zipfile

    from builder.tasks import build_revision
    from core.actions import Claim, claim_smoke_test, finish_smoke_test, submit_revision

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("player.py", SLOW_PLAYER)
    revision = submit_revision(make_user(), "tic-tac-toe", "slow", buf.getvalue())
    build_revision(Build.objects.get(revision=revision).pk)
    smoke = claim_smoke_test(SmokeTest.objects.get(revision=revision).pk, "test")
    assert finish_smoke_test(Claim.of(smoke), passed=True, reason="declared by the test")
    revision.refresh_from_db()
    return revision


@pytest.mark.django_db(transaction=True)
def test_a_duel_longer_than_its_lease_is_not_stolen_while_its_worker_lives(eligible, make_user, settings):
    from django.db import connection

    from core.actions import requeue_expired_leases, schedule_duel

    slow, quick = slow_eligible_revision(make_user), eligible("random")
    settings.LEASE_SECONDS = 1.5
    settings.HEARTBEAT_SECONDS = 0.3
    duel = schedule_duel(slow, quick, num_matches=4)  # >= 8 slow moves: >= 3.2 s, over two leases
    stop = threading.Event()
    requeued = []

    def reaper():
        try:
            while not stop.is_set():
                requeued.append(requeue_expired_leases()["duel"])
                time.sleep(0.2)
        finally:
            connection.close()

    thread = threading.Thread(target=reaper)
    thread.start()
    started = time.monotonic()
    try:
        assert run_duel(duel.pk) == "recorded"
    finally:
        stop.set()
        thread.join()
    assert time.monotonic() - started > 2 * settings.LEASE_SECONDS  # it really outlived its lease
    assert sum(requeued) == 0
    assert Duel.objects.values_list("state", "attempts").get(pk=duel.pk) == ("FINISHED", 1)
