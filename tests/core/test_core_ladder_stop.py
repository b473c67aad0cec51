"""Ladder duels stop when decided (``run_duel.stopping``), through the duel task and the real sandbox: a
ladder duel between a strong and a weak agent ends early and is stored and rated by the matches it
played, with where and why it stopped; with ``TM_DUEL_STOP_EARLY`` off it plays every match; a challenge
between the same two plays every match."""

import pytest

from core.actions import schedule_duel
from core.models import Duel, Match, PairRecord, Rating
from duel_runner.tasks import run_duel
from run_duel.stopping import StopRule
from tournament_manager.actions import rate_pending_duels

# Tasks commit like in production (and the heartbeat thread must not wait on the test's transaction).
pytestmark = pytest.mark.django_db(transaction=True)

PLANNED = 40


def test_a_ladder_duel_between_a_strong_and_a_weak_agent_stops_early_and_is_rated(eligible):
    strong, weak = eligible("minimax", name="strong"), eligible("random", name="weak")
    duel = schedule_duel(strong, weak, kind=Duel.Kind.LADDER, num_matches=PLANNED)
    assert run_duel(duel.pk) == "recorded"
    duel.refresh_from_db()
    played = duel.num_matches
    assert duel.state == "FINISHED" and duel.other_errors == 0
    assert played < PLANNED and played % 2 == 0  # stopped, after a whole pair
    assert Match.objects.filter(duel=duel).count() == played
    assert duel.player_1_wins + duel.player_2_wins + duel.draws == played
    assert duel.result == "PLAYER_1_WIN"
    assert duel.planned_matches == PLANNED and duel.stop_rule == StopRule().to_spec()
    assert duel.stopped_early["after_matches"] == played and duel.stopped_early["leader"] == "PLAYER_1"

    assert rate_pending_duels(duel.environment_id) == 1
    duel.refresh_from_db()
    assert duel.rated
    ratings = {r.competitor_id: r for r in Rating.objects.filter(environment_id=duel.environment_id)}
    assert ratings[strong.competitor_id].matches == ratings[weak.competitor_id].matches == played
    assert ratings[strong.competitor_id].mu > ratings[weak.competitor_id].mu
    record = PairRecord.objects.get(environment_id=duel.environment_id)
    assert record.low_wins + record.high_wins + record.draws == played  # the tie fit counts what was played


def test_a_challenge_between_the_same_agents_plays_every_match(eligible):
    strong, weak = eligible("minimax", name="strong"), eligible("random", name="weak")
    duel = schedule_duel(strong, weak, kind=Duel.Kind.CHALLENGE, num_matches=PLANNED)
    assert run_duel(duel.pk) == "recorded"
    duel.refresh_from_db()
    assert duel.num_matches == PLANNED == Match.objects.filter(duel=duel).count()
    assert duel.stop_rule is None and duel.stopped_early is None


def test_with_the_setting_off_a_ladder_duel_plays_every_match(eligible, settings):
    settings.TM_DUEL_STOP_EARLY = False
    strong, weak = eligible("minimax", name="strong"), eligible("random", name="weak")
    duel = schedule_duel(strong, weak, kind=Duel.Kind.LADDER, num_matches=PLANNED)
    assert run_duel(duel.pk) == "recorded"
    duel.refresh_from_db()
    assert duel.num_matches == PLANNED == Match.objects.filter(duel=duel).count()
    assert duel.stop_rule is None and duel.planned_matches is None and duel.stopped_early is None
