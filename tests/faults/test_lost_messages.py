"""Lost messages: the database, not the broker, says what is left to do.

- Finished duels whose rating trigger was lost (Redis restarted right after they were recorded) are
  rated by a worker's reaper without waiting for another duel of that game.
- A QUEUED job whose hint was lost is re-sent after ``STALE_QUEUED_SECONDS`` even while the broker queue
  is long (it used to wait for an empty queue).
"""

from __future__ import annotations

import base64
import json
from datetime import timedelta

import pytest
import redis
from core_testlib import REDIS_TEST_URL, duel_json, is_postgres, use_broker, wait_for, zip_player
from django.utils import timezone

from core.actions import (
    Claim,
    claim_duel,
    record_duel_result,
    resend_stale_hints,
    schedule_duel,
    submit_revision,
)
from core.models import Build, Duel, Revision, SmokeTest
from core.queue import send_task

pytestmark = [pytest.mark.slow, pytest.mark.redis]


def test_finished_duels_whose_rating_trigger_was_lost_are_rated_by_the_reaper(start_worker, make_revision):
    a, b = make_revision(), make_revision()
    use_broker("memory://")  # this process's hints go nowhere: every rating trigger below is lost
    duels = []
    for _ in range(5):
        duel = schedule_duel(a, b)
        assert record_duel_result(Claim.of(claim_duel(duel.pk, "gone")), duel_json())
        duels.append(duel.pk)
    assert Duel.objects.filter(pk__in=duels, state="FINISHED", rated=False).count() == 5
    start_worker()  # no new duel is ever recorded: only the reaper can notice
    wait_for(
        lambda: Duel.objects.filter(pk__in=duels, rated=True).count() == 5,
        90,
        "the lost ratings to be applied",
    )


def test_a_lost_hint_is_resent_while_the_broker_queue_is_long(broker, make_revision, settings):
    if not is_postgres():
        pytest.skip("reads the Redis queue; the SQLite run uses the filesystem broker")
    use_broker("memory://")
    duel = schedule_duel(make_revision(), make_revision())  # its hint is lost
    Duel.objects.filter(pk=duel.pk).update(enqueued_at=timezone.now() - timedelta(hours=1))
    use_broker(broker.url, broker.options)
    for _ in range(20):  # a long backlog of other work
        send_task("duel_runner.run_duel", 10**9)
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    client = redis.Redis.from_url(REDIS_TEST_URL)
    assert client.llen(queue) == 20
    assert resend_stale_hints()["duel"] == 1
    bodies = [json.loads(raw) for raw in client.lrange(queue, 0, -1)]
    assert len(bodies) == 21
    args = [json.loads(base64.b64decode(b["body"]))[0] for b in bodies]
    assert [duel.pk] in args


def test_work_queued_before_the_broker_was_wiped_is_recovered_from_the_database(
    start_worker, broker, environments, make_user
):
    revision = submit_revision(make_user(), "tic-tac-toe", "bot", zip_player("random"))
    broker.wipe()  # Redis FLUSHDB (or the filesystem queue emptied): the build's message is gone
    start_worker()
    wait_for(
        lambda: Revision.objects.get(pk=revision.pk).state == "ELIGIBLE", 120, "the build and smoke test"
    )
    build = Build.objects.get(revision=revision)
    assert (build.state, build.attempts) == ("SUCCEEDED", 1)
    assert SmokeTest.objects.filter(revision=revision).count() == 1
