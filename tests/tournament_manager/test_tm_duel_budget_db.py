"""The ladder against the database: duel lengths per pairing, the daily budget, a settled ladder rests."""

from __future__ import annotations

import random
from datetime import timedelta

from django.utils import timezone
from tm_factories import play

from core.models import Duel, Rating
from tournament_manager.actions import ladder_candidates, matchmake

W1, W2 = "PLAYER_1_WIN", "PLAYER_2_WIN"


def test_ladder_duels_get_their_length_from_the_cost_model(hidden_env, make_competitor, settings):
    settings.TM_MIN_DUEL_MATCHES = 2
    settings.TM_MAX_DUEL_MATCHES = 0  # 4 x the game's matches_per_duel (4) = 16
    settings.TM_DUEL_FIXED_SECONDS, settings.TM_DUEL_MATCH_SECONDS = 0.3, 0.05
    for _ in range(4):
        make_competitor()
    created = matchmake(hidden_env.pk, rng=random.Random(1), batch_size=2)
    assert len(created) == 2
    # Newcomers are uncertain: the cheapest informative duel is the shortest side-swapped one.
    assert all(d.num_matches == 2 for d in created)
    # A start ten times dearer buys longer duels for the same pairs.
    Duel.objects.all().delete()
    settings.TM_DUEL_FIXED_SECONDS = 3.0
    created = matchmake(hidden_env.pk, rng=random.Random(1), batch_size=2)
    assert all(d.num_matches in (4, 6, 8, 10, 12, 14, 16) for d in created)


def test_the_daily_budget_counts_finished_and_running_ladder_duels(hidden_env, make_competitor, settings):
    settings.TM_DAILY_DUELS = 2
    settings.TM_PLACEMENT_MATCHES = 0
    a, b, c, d = (make_competitor() for _ in range(4))
    play(a, b, [W1, W2])
    play(a, c, [W1, W2])
    old = play(b, d, [W1, W2])
    Duel.objects.filter(pk=old.pk).update(finished_at=timezone.now() - timedelta(days=1, minutes=1))
    today = {cand.id: cand.duels_today for cand, _ in ladder_candidates(hidden_env.pk)}
    assert today == {a.pk: 2, b.pk: 1, c.pk: 1, d.pk: 0}
    created = matchmake(hidden_env.pk, rng=random.Random(1), batch_size=4)
    players = {r.competitor_id for duel in created for r in (duel.revision_1, duel.revision_2)}
    assert len(created) == 1 and a.pk not in players  # b, c, d: one disjoint pair
    # The duel in flight counts too.
    after = {cand.id: cand.duels_today for cand, _ in ladder_candidates(hidden_env.pk)}
    assert all(after[p] == today[p] + 1 for p in players)


def test_a_settled_ladder_schedules_nothing(hidden_env, make_competitor, settings):
    """Settled means the stored Bradley-Terry fit says so, never TrueSkill's sigma: four agents that
    always draw keep playing until the fit has seen it, then rest (every pair a tie within the margin)."""
    settings.TM_PLACEMENT_MATCHES = 10
    settings.TM_TIE_MARGIN = 0.2
    bots = [make_competitor() for _ in range(4)]
    for i, bot in enumerate(bots):
        for other in bots[i + 1 :]:
            play(bot, other, ["DRAW"] * 30)  # every pair: near pairs need TM_PAIR_MATCHES (20) results
    from tournament_manager import tie_fit
    from tournament_manager.actions import rate_pending_duels

    rate_pending_duels(hidden_env.pk)
    # TrueSkill is sure of them (sigma 0.3): the old rule rested here. Without a fit nothing is settled.
    Rating.objects.filter(environment=hidden_env).update(matches=100, sigma=0.3)
    assert tie_fit.stored_fit(hidden_env.pk) is None
    assert len(matchmake(hidden_env.pk, rng=random.Random(1), batch_size=4)) == 2
    Duel.objects.filter(state=Duel.State.QUEUED).delete()
    settings.TM_PAIR_MATCHES = 0  # first without the full-pair rule: the verdicts alone
    fit = tie_fit.refresh(hidden_env.pk)
    assert fit.settled == {(a.pk, b.pk): "tie" for a in bots for b in bots if a.pk < b.pk}
    assert matchmake(hidden_env.pk, rng=random.Random(1), batch_size=4) == []
    # A margin of 0 only rests on a known order: the draws settle nothing.
    settings.TM_TIE_MARGIN = 0.0
    tie_fit.refresh(hidden_env.pk)
    assert len(matchmake(hidden_env.pk, rng=random.Random(1), batch_size=4)) == 2
    Duel.objects.filter(state=Duel.State.QUEUED).delete()
    # With TM_PAIR_MATCHES (20), pairs with 30 results count fully; with the margin at 0 their order is
    # open, so they are replayed up to TM_OPEN_PAIR_MATCHES results, then rest.
    settings.TM_PAIR_MATCHES = 20
    tie_fit.refresh(hidden_env.pk)
    assert len(matchmake(hidden_env.pk, rng=random.Random(1), batch_size=4)) == 2
    Duel.objects.filter(state=Duel.State.QUEUED).delete()
    for limit in (30, 0):
        settings.TM_OPEN_PAIR_MATCHES = limit
        tie_fit.refresh(hidden_env.pk)
        assert matchmake(hidden_env.pk, rng=random.Random(1), batch_size=4) == []
    settings.TM_PAIR_MATCHES = 40  # now they are near pairs still to play
    tie_fit.refresh(hidden_env.pk)
    assert len(matchmake(hidden_env.pk, rng=random.Random(1), batch_size=4)) == 2
