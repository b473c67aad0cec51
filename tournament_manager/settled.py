"""When a pair of competitors is settled: its order, or its tie, is known from the Bradley-Terry fit.

The leaderboard's order is the Bradley-Terry fit of :mod:`tournament_manager.tie_fit` (every pair
counting as at most ``TM_PAIR_MATCHES`` results, bootstrap intervals). A pair ``a``, ``b`` is **settled**
when the 95 % bootstrap interval of ``theta_a - theta_b`` (from the fit's replicates: the two strengths' joint
uncertainty, not two separate intervals)

- excludes 0: their order is known (``"order"``), or
- lies within ``[-margin, margin]``: they are tied within the stated margin (``"tie"``; a margin of 0.2
  in log-strength is an expected score between 0.45 and 0.55 between them). Two agents that always draw
  have a difference interval of exactly 0 and are settled as a tie.

and the pair is not one of the **near pairs still to play** (:func:`needs_play`): pairs at most
``TM_NEIGHBOURS`` places apart in the fit's order with fewer than ``TM_PAIR_MATCHES`` (20) results head
to head. The fit counts each pair as at most that many results, so the estimand is the round robin's, and
in a game whose strategies cycle no model replaces the results of pairs close in the order. Nothing else
settles a pair: never TrueSkill's sigma. Matchmaking does not replay settled pairs and plays the near
pairs still to play, so a league whose neighbours are all settled rests. A pair with ``TM_PAIR_MATCHES``
results is **full** (not replayed) unless it is a near pair whose order is still **open** (neither
settled nor a tie): that one is replayed up to ``TM_OPEN_PAIR_MATCHES`` results (:func:`open_pairs`).

**Intervals that own up to the model's misfit.** A one-number model is wrong where a game is not a
Bradley-Terry game (outcomes that saturate, strategies that cycle), and then a ladder's estimate, which
has played neighbours often and far pairs little, differs from the round robin's by more than the
bootstrap's sampling noise (the bootstrap cannot see a bias). :func:`misfit_dispersion` measures how far
the near pairs' results stray from the fit (the quasi-likelihood dispersion: the Pearson statistic per
pair against the bootstrap's own noise, its games); above 1, every interval and replicate is widened
about the estimate by its square root, so "settled" and "=" are decided on the widened ones. A
Bradley-Terry league is left alone (dispersion about 1); a complete round robin of a misfitting game,
whose bootstrap already covers, gets wider intervals than it needs (conservative: it settles later).
Measured coverage: ``docs/RATINGS.md``.

Without replicates (the linearised intervals of very large fits) the difference interval is bounded by
the two competitors' own intervals, ``[lo_a - hi_b, hi_a - lo_b]``: wider, so it settles later, never
wrongly earlier. Above :data:`ALL_PAIRS_MAX` competitors only pairs at most :data:`WINDOW` places apart in
the fit's order are checked with the replicates; farther pairs use that bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from tournament_manager.ids import Id

#: Default tie margin (log-strength): ``TM_TIE_MARGIN``.
TIE_MARGIN = 0.2
#: Default ``TM_PAIR_MATCHES``: a pair counts as at most this many results in the fit, and neighbours in
#: the fit's order are settled only once they have played this many matches head to head.
PAIR_MATCHES = 20
#: Default neighbourhood (places apart in the fit's order) whose pairs must be played: ``TM_NEIGHBOURS``.
NEAR = 5
#: Default ``TM_OPEN_PAIR_MATCHES``: a near pair whose order the fit does not know yet (neither settled
#: nor a tie) is replayed past ``PAIR_MATCHES`` up to this many results (0: never past it).
OPEN_PAIR_MATCHES = 120
#: Up to this many competitors every pair is checked with the bootstrap replicates.
ALL_PAIRS_MAX = 300
#: Beyond it, pairs at most this many places apart in the fit's order.
WINDOW = 20
#: Up to this many competitors the field scores' intervals come from the replicates (n^2 per replicate);
#: above, from each competitor's own interval with the others at their estimates.
SCORE_REPLICATES_MAX = 1500
#: The misfit dispersion (:func:`misfit_dispersion`) needs more pairs than this to be estimated.
DISPERSION_MIN_PAIRS = 3
#: Floor of one match's score variance in the dispersion (a pair that always draws has none).
DISPERSION_VAR_FLOOR = 0.02
ORDER, TIE = "order", "tie"


def verdict(low: float, high: float, margin: float) -> str | None:
    """``"order"``, ``"tie"`` or None (open) for a 95 % interval ``[low, high]`` of a difference (a
    margin of 0: only a known order settles)."""
    if low > 0.0 or high < 0.0:
        return ORDER
    if margin > 0.0 and -margin <= low and high <= margin:
        return TIE
    return None


def pair_verdicts(
    ids: Sequence[Id],
    theta: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    replicates: np.ndarray | None,
    margin: float,
) -> dict[tuple[Id, Id], str]:
    """Settled pairs ``(id_a, id_b)`` (in ``ids`` order, a before b) -> ``"order"`` or ``"tie"``."""
    n = len(ids)
    if n < 2:
        return {}
    theta = np.asarray(theta, dtype=np.float64)
    if n <= ALL_PAIRS_MAX:
        ia, ib = np.triu_indices(n, 1)
    else:
        order = np.argsort(-theta, kind="stable")
        rows = [(order[x], order[y]) for x in range(n) for y in range(x + 1, min(n, x + 1 + WINDOW))]
        ia = np.array([min(r) for r in rows])
        ib = np.array([max(r) for r in rows])
    if replicates is not None and len(replicates):
        low, high = np.empty(ia.size), np.empty(ia.size)
        block = max(1, 2_000_000 // len(replicates))  # bounds the (replicates x pairs) differences held
        for at in range(0, ia.size, block):
            diffs = replicates[:, ia[at : at + block]] - replicates[:, ib[at : at + block]]
            low[at : at + block], high[at : at + block] = np.percentile(diffs, [2.5, 97.5], axis=0)
        point = theta[ia] - theta[ib]
        low, high = np.minimum(low, point), np.maximum(high, point)
    else:
        low, high = lower[ia] - upper[ib], upper[ia] - lower[ib]
    out: dict[tuple[Id, Id], str] = {}
    for a, b, lo, hi in zip(ia.tolist(), ib.tolist(), low.tolist(), high.tolist(), strict=True):
        v = verdict(lo, hi, margin)
        if v is not None:
            out[(ids[a], ids[b])] = v
    return out


def _near_games(
    ids: Sequence[Id], theta: np.ndarray, pairs: np.ndarray, table: np.ndarray, near: int
) -> dict[tuple[Id, Id], float]:
    """Pairs at most ``near`` places apart in the fit's order (``(id_a, id_b)`` in ``ids`` order) -> their
    results head to head (0 for a pair that never played)."""
    n = len(ids)
    if n < 2 or near < 1:
        return {}
    games = {
        (int(a), int(b)): float(g)
        for (a, b), g in zip(np.asarray(pairs).tolist(), np.asarray(table).sum(axis=1).tolist(), strict=True)
    }
    order = np.argsort(-np.asarray(theta), kind="stable").tolist()
    out = {}
    for x in range(n):
        for y in range(x + 1, min(n, x + 1 + near)):
            a, b = min(order[x], order[y]), max(order[x], order[y])
            out[(ids[a], ids[b])] = games.get((a, b), 0.0)
    return out


def needs_play(
    ids: Sequence[Id], theta: np.ndarray, pairs: np.ndarray, table: np.ndarray, near: int, matches: int
) -> frozenset[tuple[Id, Id]]:
    """Pairs at most ``near`` places apart in the fit's order with fewer than ``matches`` results head to
    head: the estimand counts every pair, and in a game whose strategies cycle no model can stand in for
    the results of a pair close in the order, so they are never settled and matchmaking plays them."""
    if matches <= 0:
        return frozenset()
    return frozenset(p for p, g in _near_games(ids, theta, pairs, table, near).items() if g < matches)


def open_pairs(
    ids: Sequence[Id],
    theta: np.ndarray,
    pairs: np.ndarray,
    table: np.ndarray,
    near: int,
    verdicts: Mapping[tuple[Id, Id], str],
    open_matches: int,
) -> frozenset[tuple[Id, Id]]:
    """Near pairs (at most ``near`` places apart in the fit's order) whose order the fit does not know
    yet, neither settled nor a tie in ``verdicts``, with fewer than ``open_matches`` results: they stay
    worth replaying after they are full (:func:`full_pairs`). A full pair counts as ``PAIR_MATCHES``
    results in the fit, but its share of the points is measured from all its results, so replaying it
    still narrows the fit's intervals (its weight ``cap / games`` times its score's variance
    ``games p (1 - p)`` is ``cap^2 p (1 - p) / games``); ``open_matches`` bounds it, so a pair that never
    separates (a cycle, a difference at the margin) still rests."""
    if open_matches <= 0:
        return frozenset()
    return frozenset(
        p
        for p, g in _near_games(ids, theta, pairs, table, near).items()
        if g < open_matches and p not in verdicts and (p[1], p[0]) not in verdicts
    )


def full_pairs(
    ids: Sequence[Id],
    pairs: np.ndarray,
    table: np.ndarray,
    matches: int,
    still_open: frozenset[tuple[Id, Id]] = frozenset(),
) -> frozenset[tuple[Id, Id]]:
    """Pairs with at least ``matches`` results (0: none), the fit counting them as ``matches`` results,
    except those ``still_open`` (:func:`open_pairs`): replaying them still teaches the fit their order."""
    if matches <= 0 or not len(pairs):
        return frozenset()
    done = np.flatnonzero(np.asarray(table).sum(axis=1) >= matches)
    found = ((ids[int(pairs[k, 0])], ids[int(pairs[k, 1])]) for k in done)
    return frozenset(p for p in found if p not in still_open and (p[1], p[0]) not in still_open)


def knows_order(
    a: Id,
    b: Id,
    verdicts: Mapping[tuple[Id, Id], str],
    intervals: Mapping[Id, tuple[float, float, float]],
    checked_all: bool,
) -> bool:
    """Whether the fit knows which of ``a`` and ``b`` is stronger (their difference interval excludes 0)."""
    found = verdicts.get((a, b)) or verdicts.get((b, a))
    if found is not None or checked_all or a not in intervals or b not in intervals:
        return found == ORDER
    _, lo_a, hi_a = intervals[a]
    _, lo_b, hi_b = intervals[b]
    return lo_a > hi_b or lo_b > hi_a


def rank_by_fit(order: Sequence[Id], known: Callable[[Id, Id], bool]) -> dict[Id, int]:
    """Competition ranks (1, 2, 2, 4) for ``order`` (best first): walking down, a competitor shares the
    rank of its tie group's leader (the group's first member) unless ``known(leader, it)`` says their
    order is known. Comparing with the leader, not the previous row, keeps a chain of close neighbours
    from tying the whole board."""
    ranks: dict[Id, int] = {}
    leader: Id | None = None
    for pos, cid in enumerate(order, start=1):
        if leader is not None and not known(leader, cid):
            ranks[cid] = ranks[leader]
        else:
            ranks[cid] = pos
            leader = cid
    return ranks


def field_scores(
    theta: np.ndarray, lower: np.ndarray, upper: np.ndarray, replicates: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each competitor's expected score against the whole field (a uniformly drawn other competitor) under
    the fit, and its 95 % interval: the bootstrap replicates' percentiles (up to
    :data:`SCORE_REPLICATES_MAX` competitors), else the score at the competitor's interval ends with the
    others held at their estimates."""
    n = theta.size

    def scores(th: np.ndarray) -> np.ndarray:
        out = np.empty(n)
        for start in range(0, n, 512):
            block = th[start : start + 512, None] - th[None, :]
            out[start : start + 512] = (1.0 / (1.0 + np.exp(-block))).sum(axis=1) - 0.5  # minus itself
        return out / max(1, n - 1)

    def shifted(own: np.ndarray) -> np.ndarray:
        # Competitor i at own[i], everyone else at theta: sum_j sigmoid(own_i - theta_j) minus the self term.
        out = np.empty(n)
        for start in range(0, n, 512):
            block = own[start : start + 512, None] - theta[None, :]
            total = (1.0 / (1.0 + np.exp(-block))).sum(axis=1)
            self_term = 1.0 / (1.0 + np.exp(-(own[start : start + 512] - theta[start : start + 512])))
            out[start : start + 512] = total - self_term
        return out / max(1, n - 1)

    point = scores(theta)
    if n < 2:
        return point, point.copy(), point.copy()
    if replicates is not None and len(replicates) and n <= SCORE_REPLICATES_MAX:
        boot = np.stack([scores(r) for r in replicates])
        low, high = np.percentile(boot, [2.5, 97.5], axis=0)
    else:
        low, high = shifted(lower), shifted(upper)
    return point, np.minimum(low, point), np.maximum(high, point)


def is_settled(
    a: Id,
    b: Id,
    verdicts: Mapping[tuple[Id, Id], str],
    intervals: Mapping[Id, tuple[float, float, float]],
    margin: float,
    checked_all: bool,
) -> bool:
    """Whether ``a``/``b`` is settled by a stored fit (``verdicts`` from :func:`pair_verdicts`, the
    competitors' ``(strength, lower, upper)``). A competitor the fit has not seen is never settled."""
    if (a, b) in verdicts or (b, a) in verdicts:
        return True
    if checked_all or a not in intervals or b not in intervals:
        return False
    _, lo_a, hi_a = intervals[a]
    _, lo_b, hi_b = intervals[b]
    return verdict(lo_a - hi_b, hi_a - lo_b, margin) is not None


@dataclass(frozen=True)
class PairFit:
    """The leaderboard's fit of a pair table: strengths with intervals and the settled pairs."""

    #: id -> (strength, lower, upper): the weighted Bradley-Terry log-strength and its 95 % interval.
    intervals: dict[Id, tuple[float, float, float]]
    settled: dict[tuple[Id, Id], str] = field(default_factory=dict)
    margin: float = TIE_MARGIN
    checked_all: bool = True
    method: str = "none"
    n_results: int = 0
    #: Bootstrap refits (replicates, competitors) in ``ids`` order, when kept (benchmarks).
    replicates: np.ndarray | None = None
    ids: tuple[Id, ...] = ()
    #: id -> (expected score against the field, lower, upper): :func:`field_scores`.
    scores: dict[Id, tuple[float, float, float]] = field(default_factory=dict)
    #: Near pairs that have not played enough to be settled (:func:`needs_play`).
    needs_play: frozenset[tuple[Id, Id]] = frozenset()
    #: Pairs with ``pair_matches`` results or more (they count fully), but for the near pairs whose order is
    #: still open with fewer than ``open_matches`` (:func:`open_pairs`): replaying them is not worth it.
    full: frozenset[tuple[Id, Id]] = frozenset()
    #: The near pairs' misfit dispersion (:func:`misfit_dispersion`); above 1 every interval was widened
    #: by its square root.
    dispersion: float = 1.0

    def is_settled(self, a: Id, b: Id) -> bool:
        """Whether the pair's order or tie is known (never for a competitor the fit has not seen)."""
        if (a, b) in self.needs_play or (b, a) in self.needs_play:
            return False
        return is_settled(a, b, self.settled, self.intervals, self.margin, self.checked_all)

    def worth_playing(self, a: Id, b: Id) -> bool:
        """Whether a duel between them can still move the leaderboard: not settled and not full."""
        return not self.is_settled(a, b) and (a, b) not in self.full and (b, a) not in self.full

    def needs_no_duel(self, a: Id, b: Id) -> bool:
        """Matchmaking's test: settled, or full (see :meth:`worth_playing`)."""
        return not self.worth_playing(a, b)

    def knows_order(self, a: Id, b: Id) -> bool:
        """Whether the fit knows which of the two is stronger."""
        return knows_order(a, b, self.settled, self.intervals, self.checked_all)


def misfit_dispersion(
    theta: np.ndarray, pairs: np.ndarray, table: np.ndarray, near: int, cap: float | None
) -> float:
    """How far the near pairs' results stray from the Bradley-Terry fit, as a variance ratio (1: no more
    than the model's own noise; :data:`DISPERSION_MIN_PAIRS` pairs or fewer: 1).

    For each pair at most ``near`` places apart in the fit's order, the Pearson statistic of its score
    ``(w / g - p)^2 * g' / v``: ``p`` the fit's expected score of the low index, ``v`` the variance of one
    match's score under the model with the pair's own draw share (at least :data:`DISPERSION_VAR_FLOOR`),
    and ``g'`` the pair's games (``min(games, cap)`` with a ``cap``). The leaderboard passes no cap: its
    bootstrap resamples every result of a pair before weighting it, so a pair's share is as precise as its
    games make it, and that is the noise the misfit is compared with. Their mean, over one minus the share
    of degrees of freedom the fit used, is the quasi-likelihood dispersion."""
    table = np.asarray(table, dtype=np.float64).reshape(-1, 3)
    n = theta.size
    if n < 2 or table.shape[0] <= DISPERSION_MIN_PAIRS:
        return 1.0
    games = table.sum(axis=1)
    share = (table[:, 2] + 0.5 * table[:, 1]) / games
    p = 1.0 / (1.0 + np.exp(theta[pairs[:, 1]] - theta[pairs[:, 0]]))
    draws = table[:, 1] / games
    var = np.maximum(np.maximum(p - draws / 2.0, 0.0) + draws / 4.0 - p * p, DISPERSION_VAR_FLOOR)
    counted = games if cap is None else np.minimum(games, cap)
    chi = (share - p) ** 2 * counted / var
    place = np.empty(n, dtype=np.int64)
    place[np.argsort(-theta, kind="stable")] = np.arange(n)
    close = np.abs(place[pairs[:, 0]] - place[pairs[:, 1]]) <= max(1, near)
    used = (n - 1) / table.shape[0]
    if not close.any() or used >= 1.0:
        return 1.0
    return float(chi[close].mean() / (1.0 - used))


def fit_table(
    ids: Sequence[Id],
    pairs: np.ndarray,
    table: np.ndarray,
    *,
    seed: int = 0,
    bootstrap: int = 100,
    margin: float = TIE_MARGIN,
    keep_replicates: bool = False,
    pair_matches: int = PAIR_MATCHES,
    near: int = NEAR,
    open_matches: int = OPEN_PAIR_MATCHES,
) -> PairFit:
    """Fit a pair table the leaderboard's way: Bradley-Terry with every pair counting as at most
    ``pair_matches`` results (:func:`~tournament_manager.bradley_terry.pair_weights`: how often the
    schedule replayed a pair does not move the estimate), bootstrap intervals, the settled pairs
    (:func:`pair_verdicts`) and the near pairs still to play (:func:`needs_play`). ``pairs``/``table`` as
    :func:`~tournament_manager.bradley_terry.fit_pair_counts` takes them; ``pair_matches`` 0: every pair
    that played counts the same (inverse-sampling weights) and no pair needs play. Near pairs whose order
    is still open are not full before ``open_matches`` results (:func:`open_pairs`)."""
    ids = list(ids)
    if not ids:
        return PairFit({}, margin=margin)
    # Here, not at the top: the web imports this module for its verdicts, and never fits (scipy).
    from tournament_manager.bradley_terry import fit_pair_counts, pair_weights

    bt = fit_pair_counts(
        len(ids),
        pairs,
        table,
        bootstrap=bootstrap,
        seed=seed,
        weights=pair_weights(table, cap=pair_matches if pair_matches > 0 else None),
        keep_replicates=True,
    )
    theta, lower, upper, replicates = bt.theta, bt.lower, bt.upper, bt.replicates
    dispersion = misfit_dispersion(theta, pairs, table, near, None)
    widen = math.sqrt(max(1.0, dispersion))
    if widen > 1.0:  # the model misses more than its noise: every interval widens by sqrt(dispersion)
        lower, upper = theta + widen * (lower - theta), theta + widen * (upper - theta)
        if replicates is not None:
            replicates = theta + widen * (replicates - theta)
    intervals = {c: (float(theta[k]), float(lower[k]), float(upper[k])) for k, c in enumerate(ids)}
    point, low, high = field_scores(theta, lower, upper, replicates)
    scores = {c: (float(point[k]), float(low[k]), float(high[k])) for k, c in enumerate(ids)}
    verdicts = pair_verdicts(ids, theta, lower, upper, replicates, margin)
    still_open = open_pairs(ids, theta, pairs, table, near, verdicts, open_matches)
    return PairFit(
        intervals,
        verdicts,
        margin,
        len(ids) <= ALL_PAIRS_MAX,
        bt.method,
        bt.n_results,
        replicates if keep_replicates else None,
        tuple(ids),
        scores,
        needs_play(ids, theta, pairs, table, near, pair_matches),
        full_pairs(ids, pairs, table, pair_matches, still_open),
        dispersion,
    )
