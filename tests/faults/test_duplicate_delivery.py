"""Duplicate and late deliveries of a duel's hint (Celery carries hints, at least once): the claim lets
exactly one run play it, and a delivery after the result is stored does nothing."""

import threading

import pytest
from django.db import connection

from core.actions import schedule_duel
from core.models import Duel, Match
from duel_runner.tasks import run_duel

# Tasks commit like in production (and the heartbeat thread must not wait on the test's transaction).
pytestmark = pytest.mark.django_db(transaction=True)


def test_a_task_delivered_after_its_duel_finished_does_nothing(eligible):
    duel = schedule_duel(eligible("random", name="a"), eligible("random", name="b"), num_matches=2)
    run_duel(duel.pk)
    finished_at = Duel.objects.get(pk=duel.pk).finished_at
    assert run_duel(duel.pk) == "not claimed"
    assert Duel.objects.get(pk=duel.pk).finished_at == finished_at
    assert Match.objects.filter(duel=duel).count() == 2


def test_the_same_duel_delivered_twice_at_once_is_played_once(eligible):

    duel = schedule_duel(eligible("random", name="a"), eligible("random", name="b"), num_matches=2)
    barrier = threading.Barrier(2)
    outcomes = []

    def deliver():
        try:
            barrier.wait()
            outcomes.append(run_duel(duel.pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=deliver) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["not claimed", "recorded"]
    duel.refresh_from_db()
    assert (duel.state, duel.attempts) == ("FINISHED", 1)
    assert Match.objects.filter(duel=duel).count() == 2
