"""Ladder matchmaking: disjoint pairs, caps, placement, idle service, ordering doubt, random share, no
starvation."""

from __future__ import annotations

import random
import statistics
from datetime import UTC, datetime, timedelta

import pytest

from tournament_manager.matchmaking import Candidate, MatchmakingPolicy, choose_pairs, ordering_doubt
from tournament_manager.rating import Skill, TrueSkillRater
from tournament_manager.simulation import SimulatedLeague

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
RECENT = NOW - timedelta(minutes=5)
RATER = TrueSkillRater()
NO_RANDOM = MatchmakingPolicy(random_share=0.0, placement_matches=0)


def veteran(cid: int, mu: float = 25.0, sigma: float = 2.0, **kw) -> Candidate:
    fields = {"matches": 50, "last_played_at": RECENT} | kw
    return Candidate(cid, Skill(mu, sigma), **fields)


def field_of(n: int, seed: int = 0) -> list[Candidate]:
    rng = random.Random(seed)
    return [veteran(i, mu=rng.uniform(10, 40), sigma=rng.uniform(1, 4)) for i in range(n)]


def ids_in(pairs: list[tuple]) -> list:
    return [cid for pair in pairs for cid in pair]


def test_pairs_are_disjoint_and_fill_the_batch():
    pairs = choose_pairs(field_of(30), 10, RATER, random.Random(1), NOW)
    assert len(pairs) == 10
    assert len(set(ids_in(pairs))) == 20
    assert all(a != b for a, b in pairs)


def test_the_batch_is_limited_by_the_available_competitors():
    pairs = choose_pairs(field_of(7), 10, RATER, random.Random(1), NOW)
    assert len(pairs) == 3


def test_paused_competitors_are_never_paired():
    cands = [veteran(i, paused=i % 2 == 0) for i in range(20)]
    pairs = choose_pairs(cands, 10, RATER, random.Random(1), NOW)
    assert pairs and all(cid % 2 == 1 for cid in ids_in(pairs))


def test_competitors_at_the_in_flight_cap_are_not_paired():
    cands = [veteran(i, in_flight=1 if i < 10 else 0) for i in range(14)]
    pairs = choose_pairs(cands, 10, RATER, random.Random(1), NOW, MatchmakingPolicy(max_in_flight=1))
    assert sorted(ids_in(pairs)) == [10, 11, 12, 13]


def test_a_higher_cap_allows_more_duels_in_flight():
    cands = [veteran(i, in_flight=1) for i in range(4)]
    assert choose_pairs(cands, 10, RATER, random.Random(1), NOW, MatchmakingPolicy(max_in_flight=2))


def test_newcomers_are_placed_first_highest_sigma_first():
    cands = [
        *field_of(10),
        Candidate("new-a", Skill(25, 6.0), 1, RECENT),
        Candidate("new-b", Skill(25, 8.3), 0, None),
    ]
    policy = MatchmakingPolicy(placement_matches=5)
    first = choose_pairs(cands, 1, RATER, random.Random(1), NOW, policy)
    assert first[0][0] == "new-b"
    two = choose_pairs(cands, 2, RATER, random.Random(1), NOW, policy)
    assert {"new-a", "new-b"} <= set(ids_in(two))


def test_long_idle_competitors_are_served_before_busy_ones():
    cands = [veteran(i, sigma=5.0) for i in range(10)]
    cands.append(veteran(99, sigma=0.5, last_played_at=NOW - timedelta(hours=3)))
    pairs = choose_pairs(
        cands, 1, RATER, random.Random(1), NOW, MatchmakingPolicy(idle_after=timedelta(hours=1))
    )
    assert pairs[0][0] == 99


def test_the_ordering_pass_pairs_the_neighbours_whose_order_is_most_in_doubt():
    cands = [veteran(0, mu=20), veteran(1, mu=30.2), veteran(2, mu=40), veteran(3, mu=30, sigma=4.0)]
    pairs = choose_pairs(cands, 1, RATER, random.Random(1), NOW, NO_RANDOM)
    assert set(pairs[0]) == {3, 1}


def test_a_settled_order_is_not_played_again():
    # 0 and 1 are far apart and well known; 2 and 3 overlap: their match is the one worth playing.
    cands = [veteran(0, mu=40, sigma=1.0), veteran(1, mu=30, sigma=1.0), veteran(2, mu=20, sigma=3.0)]
    cands.append(veteran(3, mu=21, sigma=3.0))
    pairs = choose_pairs(cands, 1, RATER, random.Random(1), NOW, NO_RANDOM)
    assert set(pairs[0]) == {2, 3}


def test_the_ordering_pass_pairs_only_near_neighbours_in_the_order_by_mu():
    cands = field_of(40, seed=4)
    place = {c.id: k for k, c in enumerate(sorted(cands, key=lambda c: c.skill.mu))}
    policy = MatchmakingPolicy(random_share=0.0, placement_matches=0, neighbours=2)
    pairs = choose_pairs(cands, 20, RATER, random.Random(1), NOW, policy)
    near = [abs(place[a] - place[b]) <= 2 for a, b in pairs]
    assert sum(near) >= 18  # the last few may be leftovers paired at random


def test_ordering_doubt_is_symmetric_and_fades_with_the_gap():
    a, b, c = Skill(25, 2.0), Skill(26, 2.0), Skill(35, 2.0)
    assert ordering_doubt(a, b) == pytest.approx(ordering_doubt(b, a))
    assert ordering_doubt(a, a) == pytest.approx(0.5 * 8.0)
    assert ordering_doubt(a, b) > ordering_doubt(a, c) > 0.0
    assert ordering_doubt(Skill(25, 4.0), Skill(26, 4.0)) > ordering_doubt(a, b)


def test_the_policy_refuses_nonsense():
    with pytest.raises(ValueError, match="neighbours"):
        MatchmakingPolicy(neighbours=0)
    with pytest.raises(ValueError, match="random_share"):
        MatchmakingPolicy(random_share=1.5)


def test_without_random_share_the_pairs_do_not_depend_on_the_rng():
    cands = field_of(40)
    assert choose_pairs(cands, 15, RATER, random.Random(1), NOW, NO_RANDOM) == choose_pairs(
        cands, 15, RATER, random.Random(2), NOW, NO_RANDOM
    )


def test_the_same_rng_state_gives_the_same_pairs():
    cands = field_of(40)
    assert choose_pairs(cands, 15, RATER, random.Random(7), NOW) == choose_pairs(
        cands, 15, RATER, random.Random(7), NOW
    )


def test_about_a_quarter_of_the_pairs_are_random():
    # 40 tight twins far apart: quality pairing always pairs twins, random pairing almost never does.
    cands = [
        veteran(2 * k + t, mu=10 * k + 0.01 * t, sigma=1.0 + 0.001 * k) for k in range(40) for t in (0, 1)
    ]
    policy = MatchmakingPolicy(random_share=0.25, placement_matches=0, rests=False)
    cross = [
        sum(a // 2 != b // 2 for a, b in choose_pairs(cands, 40, RATER, random.Random(seed), NOW, policy))
        for seed in range(40)
    ]
    # 10 random pairs among 20 leftover competitors: 10 * 18/19 ~ 9.5 of them cross twins.
    assert 8.0 <= statistics.fmean(cross) <= 11.0


def test_every_competitor_gets_duels_over_a_simulated_day():
    """30 competitors, 4 workers, 10-minute duels, one newcomer at noon: nobody waits much past idle_after."""
    league = SimulatedLeague(31, seed=3, error_prob=0.1)
    # Without resting: a competitor whose pairs are all settled waits on purpose (test_tm_duel_plan.py).
    policy = MatchmakingPolicy(idle_after=timedelta(hours=1), rests=False)
    rng = random.Random(5)
    skills = {i: RATER.initial() for i in range(31)}
    matches = dict.fromkeys(range(31), 0)
    last: dict[int, datetime | None] = dict.fromkeys(range(31), None)
    duels = dict.fromkeys(range(31), 0)
    longest_wait = timedelta(0)
    start = datetime(2026, 3, 1, tzinfo=UTC)
    for tick in range(24 * 6):
        now = start + timedelta(minutes=10 * tick)
        present = [i for i in range(31) if i < 30 or now >= start + timedelta(hours=12)]
        cands = [Candidate(i, skills[i], matches[i], last[i]) for i in present]
        for a, b in choose_pairs(cands, 4, RATER, rng, now, policy):
            for c in (a, b):
                if last[c] is not None:
                    longest_wait = max(longest_wait, now - last[c])
                last[c] = now
                duels[c] += 1
            outcome = league.play(a, b)
            if outcome is not None:
                skills[a], skills[b] = RATER.rate(skills[a], skills[b], outcome)
                matches[a] += 1
                matches[b] += 1
    assert min(duels.values()) >= 10
    assert longest_wait <= policy.idle_after + timedelta(minutes=40)


@pytest.mark.parametrize("placement", [0, 3])
def test_competitors_running_the_same_code_are_never_paired(placement):
    """Two unchanged starter kits drew 14 duels in a row: equal zips teach the ladder nothing."""
    policy = MatchmakingPolicy(random_share=0.5, placement_matches=placement)
    twins = [veteran(i, mu=25.0 + i * 0.01, matches=0, last_played_at=None, code="kit") for i in range(4)]
    others = [veteran(10 + i, mu=25.0 + i * 0.02, code=f"own-{i}") for i in range(4)]
    for seed in range(20):
        pairs = choose_pairs(twins + others, 4, RATER, random.Random(seed), NOW, policy)
        assert pairs, seed
        for a, b in pairs:
            assert not (a < 10 and b < 10), (seed, a, b)
    # Only twins left: no duel at all rather than a mirror match.
    assert choose_pairs(twins, 2, RATER, random.Random(0), NOW, policy) == []
    # Unknown code (None) is no reason to keep apart.
    unknown = [veteran(i, mu=25.0 + i * 0.01) for i in range(2)]
    assert choose_pairs(unknown, 1, RATER, random.Random(0), NOW, policy)
