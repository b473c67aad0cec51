"""A running duel's matches are stored as they are played (its page shows them live), fenced by the claim;
the final result replaces them and a released attempt's rows are dropped."""

import threading
from pathlib import Path

import pytest
from core_testlib import duel_json, wait_for
from django.db import connection

from core.actions import Claim, claim_duel, fail_duel, record_matches_so_far, schedule_duel
from core.models import Duel, Match
from duel_runner.tasks import run_duel

pytestmark = pytest.mark.django_db(transaction=True)
DELIBERATE = Path(__file__).resolve().parents[1] / "agents" / "deliberate"


def test_the_matches_of_a_running_duel_appear_before_it_finishes(eligible):
    a, b = eligible(str(DELIBERATE), name="a"), eligible(str(DELIBERATE), name="b")
    duel = schedule_duel(a, b, num_matches=60)  # 10 ms a move: several seconds of play
    outcome: list[str] = []

    def play() -> None:
        try:
            outcome.append(run_duel(duel.pk))
        finally:
            connection.close()

    worker = threading.Thread(target=play)
    worker.start()
    seen_live = wait_for(
        lambda: Duel.objects.filter(pk=duel.pk, state="RUNNING", matches__isnull=False).exists(),
        120,
        "matches of the running duel",
        interval=0.05,
    )
    worker.join(timeout=300)
    assert seen_live and outcome == ["recorded"]
    assert Match.objects.filter(duel=duel).count() == 60
    assert sorted(Match.objects.filter(duel=duel).values_list("index", flat=True)) == list(range(60))


def test_a_stale_claim_writes_no_live_match_and_a_released_attempt_leaves_none(make_revision):
    duel = schedule_duel(make_revision(), make_revision())
    first = Claim.of(claim_duel(duel.pk, "w1"))
    match = duel_json(1)["matches"][0]
    assert record_matches_so_far(first, 0, [match])
    assert fail_duel(duel.pk, "engine lost", claim=first, delay_s=0)
    assert not Match.objects.filter(duel=duel).exists()  # the next attempt plays from scratch
    second = Claim.of(claim_duel(duel.pk, "w2"))
    assert not record_matches_so_far(first, 0, [match])  # the first worker lost it
    assert record_matches_so_far(second, 0, [match, match])
    assert Match.objects.filter(duel=duel).count() == 2
