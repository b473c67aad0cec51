"""Challenges: unrated duels a person starts with one of their own competitors, a few per day."""

from __future__ import annotations

import pytest

from core.actions import ActionError, Claim, claim_duel, record_duel_result
from core.actions.challenge import ChallengeLimitError, issue_challenge
from core.models import Duel, Rating

pytestmark = pytest.mark.django_db


def test_a_challenge_queues_an_unrated_duel_between_the_playing_revisions(make_competitor, make_user):
    me = make_user()
    mine = make_competitor(owner=me)
    theirs = make_competitor()
    duel = issue_challenge(me, mine.pk, theirs.pk)
    assert duel.kind == Duel.Kind.CHALLENGE and duel.state == Duel.State.QUEUED
    assert (duel.revision_1_id, duel.revision_2_id) == (mine.current_revision_id, theirs.current_revision_id)


def test_one_may_challenge_ones_own_competitor_even_with_itself(make_competitor, make_user):
    me = make_user()
    mine = make_competitor(owner=me, public=False)
    assert issue_challenge(me, mine.pk, mine.pk).revision_1_id == mine.current_revision_id


def test_challenging_with_someone_elses_competitor_is_refused(make_competitor, make_user):
    me = make_user()
    with pytest.raises(ActionError, match="your own competitors"):
        issue_challenge(me, make_competitor().pk, make_competitor().pk)
    assert not Duel.objects.exists()


def test_a_private_competitor_cannot_be_challenged_by_others(make_competitor, make_user):
    me = make_user()
    with pytest.raises(ActionError, match="No such competitor"):
        issue_challenge(me, make_competitor(owner=me).pk, make_competitor(public=False).pk)


def test_competitors_of_different_games_cannot_meet(make_competitor, make_user):
    me = make_user()
    with pytest.raises(ActionError, match="different games"):
        issue_challenge(me, make_competitor(owner=me).pk, make_competitor(env="tic-tac-toe").pk)


def test_challenges_are_limited_per_person_and_day(make_competitor, make_user, settings):
    settings.CHALLENGES_PER_DAY = 2
    me, other = make_user(), make_user()
    mine, theirs = make_competitor(owner=me), make_competitor(owner=other)
    issue_challenge(me, mine.pk, theirs.pk)
    issue_challenge(me, mine.pk, theirs.pk)
    with pytest.raises(ChallengeLimitError, match="2 challenges a day"):
        issue_challenge(me, mine.pk, theirs.pk)
    assert issue_challenge(other, theirs.pk, mine.pk)  # the limit is per person
    assert Duel.objects.filter(kind=Duel.Kind.CHALLENGE).count() == 3


def test_a_finished_challenge_moves_no_rating(make_competitor, make_user):
    from tournament_manager.actions import rate_pending_duels

    me = make_user()
    mine, theirs = make_competitor(owner=me), make_competitor()
    duel = issue_challenge(me, mine.pk, theirs.pk)
    match = {
        "result": "PLAYER_1_WIN",
        "error_msg": "",
        "player_1_score": 1.0,
        "player_2_score": 0.0,
        "first_player": "PLAYER_1",
        "states": [],
    }
    summary = {"result": "PLAYER_1_WIN", "num_matches": 1, "player_1_wins": 1, "matches": [match]}
    claim = Claim.of(claim_duel(duel.pk, "test-worker"))
    assert record_duel_result(claim, {**summary, "player_1_score": 1.0, "player_2_score": 0.0})
    rate_pending_duels(duel.environment_id)
    assert not Rating.objects.filter(matches__gt=0).exists()
    assert Duel.objects.get(pk=duel.pk).rated  # consumed, with no effect
