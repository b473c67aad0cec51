"""Duels per worker-second: the duel-length rule, settled pairs, resting leagues and the daily budget."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from tournament_manager.duel_plan import (
    DuelCost,
    best_length,
    duel_value,
    even_lengths,
    match_information,
)
from tournament_manager.ladder_sim import LadderSetup, LadderSimulation
from tournament_manager.matchmaking import Candidate, MatchmakingPolicy, PlannedDuel, plan_duels
from tournament_manager.rating import Skill, TrueSkillRater
from tournament_manager.simulation import FixtureLeague, SimulatedLeague

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
LONG_AGO = NOW - timedelta(days=2)
RATER = TrueSkillRater()
LENGTHS = even_lengths(2, 40)
WARM = DuelCost(fixed_s=0.3, per_match_s=0.05)
POLICY = MatchmakingPolicy(cost=WARM, duel_lengths=LENGTHS, placement_matches=0)
TODAY = MatchmakingPolicy(rests=False, daily_duels=0, placement_matches=0)


def plan_fitted(cands, n, rng, now, policy, fit):
    """The production planner: the fit's settled pairs rest, its pairs still to play are candidates."""
    settled, to_play = (fit.needs_no_duel, fit.needs_play) if fit is not None else (None, ())
    return plan_duels(cands, n, RATER, rng, now, policy, settled, to_play)


def veteran(cid: int, mu: float, sigma: float, **kw) -> Candidate:
    return Candidate(cid, Skill(mu, sigma), **({"matches": 200, "last_played_at": LONG_AGO} | kw))


# --- the duel-length rule --------------------------------------------------------------------------------


def test_even_lengths_round_inwards():
    assert even_lengths(2, 10) == (2, 4, 6, 8, 10)
    assert even_lengths(3, 9) == (4, 6, 8)
    assert even_lengths(1, 2) == (2,)
    with pytest.raises(ValueError):
        even_lengths(10, 8)


def test_uncertain_pairs_get_short_duels_and_known_close_pairs_long_ones():
    newcomers = best_length(RATER, Skill(25, 8.3), Skill(25, 8.3), WARM, LENGTHS)[0]
    known = best_length(RATER, Skill(25, 1.5), Skill(25.5, 1.5), WARM, LENGTHS)[0]
    assert newcomers == 2 and known >= 8
    # The optimum follows sqrt(fixed / (per_match * s^2 * I)): a dearer start makes every duel longer.
    cold = DuelCost(fixed_s=3.0, per_match_s=0.05)
    assert best_length(RATER, Skill(25, 8.3), Skill(25, 8.3), cold, LENGTHS)[0] > newcomers
    s2i = (2 * 1.5**2) * match_information(RATER, Skill(25, 1.5), Skill(25.5, 1.5))
    assert abs(known - (WARM.fixed_s / (WARM.per_match_s * s2i)) ** 0.5) <= 2


def test_a_duel_is_worth_more_with_more_matches_but_less_per_match():
    a, b = Skill(25, 3.0), Skill(26, 3.0)
    values = [duel_value(RATER, a, b, k) for k in (2, 10, 40)]
    assert values[0] < values[1] < values[2]
    assert values[0] / 2 > values[1] / 10 > values[2] / 40


def test_a_pair_whose_order_is_known_is_worth_nothing():
    assert duel_value(RATER, Skill(40, 1.0), Skill(10, 1.0), 10) < 1e-12
    assert best_length(RATER, Skill(40, 1.0), Skill(10, 1.0), WARM, LENGTHS)[1] < 1e-12


def test_planned_duels_carry_their_length():
    cands = [veteran(i, mu=20 + i * 0.5, sigma=2.0) for i in range(6)]
    planned = plan_duels(cands, 3, RATER, random.Random(1), NOW, POLICY)
    assert planned and all(d.matches in LENGTHS for d in planned)
    for d in planned:
        a, b = Skill(20 + d.a * 0.5, 2.0), Skill(20 + d.b * 0.5, 2.0)
        assert d.matches == best_length(RATER, a, b, WARM, LENGTHS)[0]
    # Without a cost model every duel has the game's length (None).
    assert all(d.matches is None for d in plan_duels(cands, 3, RATER, random.Random(1), NOW, TODAY))


# --- settled pairs and resting ------------------------------------------------------------------------------


def test_a_settled_league_rests_even_when_everyone_is_idle():
    cands = [veteran(i, mu=10.0 + 5 * i, sigma=0.9) for i in range(10)]
    everything = lambda a, b: True  # noqa: E731 - the fit's verdict: every pair settled
    assert plan_duels(cands, 5, RATER, random.Random(1), NOW, POLICY, everything) == []
    # The previous policy plays them anyway: idle service, then neighbours, then random fill.
    assert len(plan_duels(cands, 5, RATER, random.Random(1), NOW, TODAY, everything)) == 5
    # One competitor whose pairs are open wakes up only its own pairs.
    open_9 = lambda a, b: 9 not in (a, b)  # noqa: E731
    planned = plan_duels(cands, 5, RATER, random.Random(1), NOW, POLICY, open_9)
    assert len(planned) == 1 and 9 in (planned[0].a, planned[0].b)


def test_trueskill_sigma_alone_never_settles_a_pair():
    """Two competitors TrueSkill knows precisely (sigma 0.3) at the same mu: without a fit saying their
    order or their tie is known, they keep playing (the old rule rested them on sigma)."""
    cands = [veteran(0, mu=25.0, sigma=0.3), veteran(1, mu=25.05, sigma=0.3)]
    planned = plan_duels(cands, 1, RATER, random.Random(1), NOW, POLICY)
    assert [{d.a, d.b} for d in planned] == [{0, 1}]
    assert plan_duels(cands, 1, RATER, random.Random(1), NOW, POLICY, lambda a, b: True) == []


def test_a_simulated_settled_league_plays_far_fewer_duels_per_hour_than_before():
    """Ten agents on the production ladder's loop (simulated time, the Bradley-Terry fit refreshed every
    simulated minute): once settled, ours rests."""
    setup = LadderSetup(workers=2, queue_target=4, matchmake_interval_s=10, default_matches=10, cost=WARM)
    per_hour = {}
    for name, policy in (("today", TODAY), ("ours", POLICY)):
        league = SimulatedLeague(10, seed=4, error_prob=0.0)
        sim = LadderSimulation(
            league, RATER, lambda c, n, r, t, f, p=policy: plan_fitted(c, n, r, t, p, f), setup, seed=1
        )
        sim.run(lambda s: False, max_time_s=3 * 3600)
        before = len(sim.started)
        sim.run(lambda s: False, max_time_s=4 * 3600)
        per_hour[name] = len(sim.started) - before
    assert per_hour["today"] >= 1000  # 4 duels every 10 s
    assert per_hour["ours"] <= per_hour["today"] // 10


# --- the daily budget -------------------------------------------------------------------------------------


def test_a_spent_daily_budget_keeps_a_competitor_out_of_the_ladder():
    policy = MatchmakingPolicy(cost=WARM, duel_lengths=LENGTHS, placement_matches=0, daily_duels=3)
    cands = [veteran(i, mu=25 + 0.3 * i, sigma=3.0, duels_today=3 if i < 2 else 2) for i in range(4)]
    planned = plan_duels(cands, 4, RATER, random.Random(1), NOW, policy)
    assert [(d.a, d.b) for d in planned] in ([(2, 3)], [(3, 2)])


def test_a_new_revision_places_against_competitors_whose_budget_is_spent():
    policy = MatchmakingPolicy(cost=WARM, duel_lengths=LENGTHS, placement_matches=10, daily_duels=3)
    spent = [veteran(i, mu=25 + 0.3 * i, sigma=3.0, duels_today=3) for i in range(3)]
    newcomer = Candidate(9, RATER.initial(), 0, None, duels_today=5)
    planned = plan_duels([*spent, newcomer], 4, RATER, random.Random(1), NOW, policy)
    assert len(planned) == 1 and planned[0].a == 9 and planned[0].matches in LENGTHS


def test_the_simulation_counts_duels_of_the_last_24_hours():
    league = FixtureLeague(["a", "b"], [0.6, 0.4], [("a", "b", 6, 0, 4), ("b", "a", 4, 0, 6)], seed=1)
    setup = LadderSetup(workers=1, queue_target=1, matchmake_interval_s=60, default_matches=2, cost=WARM)
    seen: list[int] = []

    def planner(cands, n, rng, now, fit):
        seen.append(cands[0].duels_today)
        return [PlannedDuel(0, 1)] if cands[0].in_flight == 0 else []

    sim = LadderSimulation(league, RATER, planner, setup, seed=1)
    sim.run(lambda s: False, max_time_s=26 * 3600)
    # One duel a minute: at each matchmaking the previous 24 h hold 1,439 started duels (not more).
    assert max(seen) == 24 * 60 - 1
    assert seen[-1] == 24 * 60 - 1
