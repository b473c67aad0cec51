"""Ladder matchmaking: which disjoint pairs of competitors should play next.

:func:`choose_pairs` fills a batch of duels in four passes, each competitor used at most once per batch:

1. **placement** - competitors with fewer than ``placement_matches`` matches, highest ``sigma`` first,
   each against the available opponent maximising :func:`informativeness` (the rater's match quality
   weighted by how uncertain the two skills are);
2. **idle** - competitors that have not played for ``idle_after`` (or never), longest idle first, so
   nobody starves when the ladder is busy (same choice of opponent);
3. **ordering** - the rest but ``random_share``: pairs at most ``neighbours`` places apart in the current
   order by ``mu`` whose order is the most in doubt, by :func:`ordering_doubt` (the probability that the
   two are ranked the wrong way round, times how much uncertainty a match between them can remove),
   chosen greedily and disjointly. A leaderboard is a ranking: what is worth playing is what could still
   swap places on it. Once a pair's order is settled its doubt vanishes and the pass moves on, so it does
   not get stuck re-pairing the same neighbours (the reason the first design mixed in a quarter of
   random pairs);
4. **random** - ``random_share`` of the slots (0 by default): uniformly random pairs.

With a cost model (``policy.cost``, :mod:`tournament_manager.duel_plan`) :func:`plan_duels` also chooses
each duel's length from ``policy.duel_lengths`` and pass 3 ranks pairs by expected ordering doubt
removed per worker-second instead of by doubt (a duel that stops when decided, ``policy.stop_rule``,
priced at the matches it is expected to play). **Resting** (``policy.rests`` and a ``settled`` test,
in production the stored Bradley-Terry fit's, :mod:`tournament_manager.settled`: the pair's difference
interval excludes 0 or lies within the tie margin, never TrueSkill's sigma): settled pairs are not
replayed, the idle pass serves only competitors with an unsettled neighbour, and free slots are left
empty instead of being filled with random pairs, so a league that knows its order stops playing.
**Daily budget** (``daily_duels``): a competitor that played that many duels in the
last 24 hours is only used as a placement opponent (new revisions first).

Measured on the TrueSkill/Dask article's game (``benchmarks/bench_rating_quality.py``, 64 agents, 10
seeds, defaults): pass 3 orders 0.952 of the pairs correctly after 500 matches and 0.994 after 1,500,
where the first design (most uncertain competitor vs most informative opponent plus 1/4 random pairs)
reached 0.946 and 0.986; random pairs only slowed the new pass down (-0.005 to -0.007 at 500 with 5-10 %).

Competitors that are paused, or already have ``max_in_flight`` duels running, are not paired, nor are
two competitors running the same code (``Candidate.code``: equal zips only draw or mirror). The
function is pure: the same inputs and the same ``rng`` state give the same pairs.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from run_duel.api import StopRule
from tournament_manager.duel_plan import DuelCost, best_length
from tournament_manager.ids import Id
from tournament_manager.rating import Rater, Skill


@dataclass(frozen=True)
class Candidate:
    """A competitor as matchmaking sees it."""

    id: Id
    skill: Skill
    matches: int
    last_played_at: datetime | None
    in_flight: int = 0
    paused: bool = False
    #: Ladder duels in the last 24 hours (for ``MatchmakingPolicy.daily_duels``).
    duels_today: int = 0
    #: What it runs (its revision's zip hash): two competitors running the same code are never paired,
    #: their duels teach nothing (two unchanged starter kits drew 14 duels in a row). ``None``: unknown.
    code: Id | None = None


@dataclass(frozen=True)
class PlannedDuel:
    """A pair to schedule and its length (``None``: the game's ``matches_per_duel``)."""

    a: Id
    b: Id
    matches: int | None = None


#: The rule ladder duels stop by (the referee's defaults, as ``duel_runner.tasks.LADDER_STOP_RULE`` asks).
LADDER_STOP_RULE = StopRule()


@dataclass(frozen=True)
class MatchmakingPolicy:
    """Tunable knobs of :func:`choose_pairs` (the defaults are what the ladder uses)."""

    #: Competitors with fewer matches than this are in their placement phase.
    placement_matches: int = 6
    #: Share of the non-placement, non-idle slots filled with random pairs.
    random_share: float = 0.0
    #: The ordering pass pairs competitors at most this many places apart in the order by ``mu``.
    neighbours: int = 5
    #: A competitor never has more than this many duels queued or running.
    max_in_flight: int = 1
    #: A competitor that has not played for this long is served before busier ones.
    idle_after: timedelta = timedelta(hours=1)
    #: Worker-seconds of a duel; ``None``: every duel has the game's length and pass 3 ranks by doubt.
    cost: DuelCost | None = None
    #: Allowed duel lengths with a cost model (even numbers); empty: the game's ``matches_per_duel``.
    duel_lengths: tuple[int, ...] = ()
    #: Settled pairs (``plan_duels``' ``settled`` test) are not replayed and free slots stay empty.
    rests: bool = True
    #: Ladder duels a competitor may play per 24 hours outside placement opponents' duty (0: no limit).
    daily_duels: int = 200
    #: The rule ladder duels stop by when decided (``run_duel.stopping``; setting ``TM_DUEL_STOP_EARLY``):
    #: with a cost model, a duel is priced at the matches it is expected to play; None: at its length.
    stop_rule: StopRule | None = LADDER_STOP_RULE

    def __post_init__(self) -> None:
        if not 0.0 <= self.random_share <= 1.0:
            raise ValueError(f"random_share must be in [0, 1], got {self.random_share}")
        if self.max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {self.max_in_flight}")
        if self.neighbours < 1:
            raise ValueError(f"neighbours must be >= 1, got {self.neighbours}")
        if self.daily_duels < 0:
            raise ValueError("daily_duels must be >= 0")
        if any(k < 1 for k in self.duel_lengths):
            raise ValueError(f"duel lengths must be >= 1, got {self.duel_lengths}")


DEFAULT_POLICY = MatchmakingPolicy()


def _sort_key(c: Candidate) -> tuple[str, str]:
    # Ids may be ints or strings; sort them deterministically without comparing mixed types.
    return (type(c.id).__name__, f"{c.id!s:>40}")


def informativeness(rater: Rater, a: Skill, b: Skill) -> float:
    """How much a match between ``a`` and ``b`` is expected to teach: match quality times uncertainty.

    ``quality * (sigma_a^4 + sigma_b^4) / c`` with ``c^2 = 2 beta^2 + sigma_a^2 + sigma_b^2``: up to a
    constant, the variance a TrueSkill update removes is ``sigma^4 / c^2`` times a factor peaking for
    evenly matched players, which match quality measures. Among equally balanced opponents it prefers
    the more uncertain one, so the information is not spent confirming what is known already.
    """
    c = math.sqrt(2 * rater.beta**2 + a.sigma**2 + b.sigma**2)
    return rater.match_quality(a, b) * (a.sigma**4 + b.sigma**4) / c


def ordering_doubt(a: Skill, b: Skill) -> float:
    """How much a match between ``a`` and ``b`` can still change their order on the leaderboard.

    ``P(wrong order) * (sigma_a^2 + sigma_b^2)`` where ``P(wrong order) = Phi(-|mu_a - mu_b| / s)`` with
    ``s^2 = sigma_a^2 + sigma_b^2``: the chance that the better-looking one is in fact the worse, weighted
    by the variance a result between them can remove (a pair of well-known competitors close in ``mu``
    teaches less than a pair with as much doubt but more uncertainty).
    """
    s2 = a.sigma**2 + b.sigma**2
    if s2 <= 0.0:
        return 0.0
    wrong = 0.5 * math.erfc(abs(a.mu - b.mu) / math.sqrt(2.0 * s2))
    return wrong * s2


def choose_pairs(
    candidates: list[Candidate],
    batch_size: int,
    rater: Rater,
    rng: random.Random,
    now: datetime,
    policy: MatchmakingPolicy = DEFAULT_POLICY,
    settled: Callable[[Id, Id], bool] | None = None,
) -> list[tuple[Id, Id]]:
    """Up to ``batch_size`` disjoint pairs ``(id_a, id_b)`` to schedule next (see the module docstring)."""
    return [(d.a, d.b) for d in plan_duels(candidates, batch_size, rater, rng, now, policy, settled)]


def plan_duels(
    candidates: list[Candidate],
    batch_size: int,
    rater: Rater,
    rng: random.Random,
    now: datetime,
    policy: MatchmakingPolicy = DEFAULT_POLICY,
    settled: Callable[[Id, Id], bool] | None = None,
    to_play: Iterable[tuple[Id, Id]] = (),
) -> list[PlannedDuel]:
    """Up to ``batch_size`` disjoint duels to schedule next, with their lengths (module docstring).

    ``settled(id_a, id_b)``: whether the pair's order or tie is known (production: the stored
    Bradley-Terry fit's verdict, :meth:`tournament_manager.tie_fit.TieFit.is_settled`); None: no pair is.
    ``to_play``: pairs the fit needs played (neighbours in its order with too few results head to head,
    ``TieFit.needs_play``): the ordering pass takes them first, then the neighbours by ``mu``. In
    production ``settled`` is ``TieFit.worth_playing``'s negation: a pair with ``TM_PAIR_MATCHES``
    results already counts fully, replaying it teaches the leaderboard nothing.
    """
    if batch_size < 0:
        raise ValueError(f"batch_size must be >= 0, got {batch_size}")
    ids = [c.id for c in candidates]
    if len(set(ids)) != len(ids):
        raise ValueError("candidate ids must be unique")
    pool: dict[Id, Candidate] = {
        c.id: c
        for c in sorted(candidates, key=_sort_key)
        if not c.paused and c.in_flight < policy.max_in_flight
    }
    budget_left = {
        c.id for c in pool.values() if not policy.daily_duels or c.duels_today < policy.daily_duels
    }
    pairs: list[PlannedDuel] = []
    cost = policy.cost if policy.duel_lengths else None

    def length(a: Skill, b: Skill) -> int | None:
        return best_length(rater, a, b, cost, policy.duel_lengths, policy.stop_rule)[0] if cost else None

    def is_settled(a: Candidate, b: Candidate) -> bool:
        return policy.rests and settled is not None and settled(a.id, b.id)

    def twins(a: Candidate, b: Candidate) -> bool:
        return a.code is not None and a.code == b.code

    def add(a: Candidate, b: Candidate) -> None:
        del pool[a.id], pool[b.id]
        pairs.append(PlannedDuel(a.id, b.id, length(a.skill, b.skill)))

    def full() -> bool:
        return len(pairs) >= batch_size or len(pool) < 2

    # 1. Placement: newcomers, most uncertain first, against anyone (a spent budget does not stop a
    # competitor from placing a new revision).
    placement = [c for c in pool.values() if c.matches < policy.placement_matches]
    for c in sorted(placement, key=lambda c: -c.skill.sigma):
        if full():
            return pairs
        if c.id in pool:
            others = [o for o in pool.values() if o.id != c.id and not twins(c, o)]
            if others:
                add(c, max(others, key=lambda o: informativeness(rater, c.skill, o.skill)))

    # Everything below only pairs competitors with budget left.
    for cid in [cid for cid in pool if cid not in budget_left]:
        del pool[cid]
    by_mu = sorted(pool.values(), key=lambda c: (c.skill.mu, rng.random()))
    neighbour_pairs = [(a, b) for x, a in enumerate(by_mu) for b in by_mu[x + 1 : x + 1 + policy.neighbours]]
    known = {frozenset((a.id, b.id)) for a, b in neighbour_pairs}
    for a, b in to_play:
        if a in pool and b in pool and a != b and frozenset((a, b)) not in known:
            known.add(frozenset((a, b)))
            neighbour_pairs.append((pool[a], pool[b]))
    open_pairs = [(a, b) for a, b in neighbour_pairs if not twins(a, b) and not is_settled(a, b)]
    unsettled = {c.id for pair in open_pairs for c in pair}

    # 2. Idle competitors, longest idle first (never played counts as idle forever); resting leagues
    # leave competitors whose neighbours are all settled alone.
    cutoff = now - policy.idle_after
    idle = [
        c
        for c in pool.values()
        if (c.last_played_at is None or c.last_played_at <= cutoff)
        and (not policy.rests or c.id in unsettled)
    ]
    for c in sorted(idle, key=lambda c: c.last_played_at or datetime.min.replace(tzinfo=now.tzinfo)):
        if full():
            return pairs
        if c.id in pool:
            others = [o for o in pool.values() if o.id != c.id and not twins(c, o) and not is_settled(c, o)]
            if others:
                add(c, max(others, key=lambda o: informativeness(rater, c.skill, o.skill)))

    # 3./4. The rest: ~(1 - random_share) by doubt (per worker-second with a cost model), the rest random.
    remaining = min(batch_size - len(pairs), len(pool) // 2)
    if remaining <= 0:
        return pairs
    wanted_random = remaining * policy.random_share
    n_random = int(wanted_random) + (rng.random() < wanted_random - int(wanted_random))

    def score(a: Candidate, b: Candidate) -> float:
        if cost:
            return best_length(rater, a.skill, b.skill, cost, policy.duel_lengths, policy.stop_rule)[1]
        return ordering_doubt(a.skill, b.skill)

    wanted_first = {frozenset(p) for p in to_play}
    scored = [
        (score(a, b) + (1e9 if frozenset((a.id, b.id)) in wanted_first else 0.0), rng.random(), a.id, b.id)
        for a, b in open_pairs
    ]
    wanted = remaining - n_random
    for _, _, a, b in sorted(scored, key=lambda t: (-t[0], t[1])):
        if wanted == 0:
            break
        if a in pool and b in pool:
            add(pool[a], pool[b])
            wanted -= 1
    if not policy.rests:
        n_random += wanted  # only when too few neighbours were left free (rare): fill with random pairs
    n_random = min(n_random, len(pool) // 2)
    if n_random:
        chosen = rng.sample(list(pool), 2 * n_random)
        for a, b in zip(chosen[0::2], chosen[1::2], strict=True):
            if not twins(pool[a], pool[b]) and not is_settled(pool[a], pool[b]):
                add(pool[a], pool[b])
    return pairs
