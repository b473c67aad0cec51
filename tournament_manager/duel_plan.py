"""What a duel between two competitors is worth per worker-second, and how long it should be.

The platform pays for worker time, and a sandboxed duel costs a fixed start/stop (containers created,
agents ready, containers removed) plus a per-match cost (:class:`DuelCost`). A duel of ``k`` matches
between ``a`` and ``b`` is worth the ordering doubt it is expected to remove:

    value(k) = P(wrong order) * (s^2 - s_k^2),   s^2 = sigma_a^2 + sigma_b^2,
    s_k^2 = 1 / (1 / s^2 + k * I)

``s_k^2`` is the variance of ``mu_a - mu_b`` after ``k`` matches (a Gaussian approximation of the
rater's update), with ``I`` the Fisher information one match carries about the difference under the
rater's probit model, ``P(a beats b) = Phi(d / c)``, ``c^2 = 2 beta^2``:
``I = phi(x)^2 / (Phi(x) Phi(-x)) / c^2`` at ``x = (mu_a - mu_b) / c``. The rate ``value(k) / cost(k)``
peaks near ``k* = sqrt(fixed / (per_match * s^2 * I))``: uncertain pairs (large ``s^2``, a newcomer) get
short duels, close, well-known pairs longer ones, and the fixed cost is spent where it buys most.
:func:`best_length` picks the best even length (sides swap every match) from the allowed ones.

**Duels that stop when decided** (``run_duel.stopping``: ladder duels end after a whole pair of matches
once a sequential test finds one player clearly stronger) cost and teach the matches they are expected to
*play*, not their cap: with a stop rule, :func:`best_length` prices a duel capped at ``k`` matches at
``m(k) = expected_matches(q, k, rule)`` matches, in its value (``k I`` becomes ``m(k) I``) and its cost.
``q`` is the rater's predictive probability that ``a`` beats ``b`` (:meth:`Rater.win_probability`); the
expectation is exact for independent matches won with probability ``q`` (a pair is won outright with
probability ``q^2`` or ``(1 - q)^2``, else split, which the test counts as no evidence; draws are not
modelled and would only stop a duel later). A lopsided pair's long duel is then cheap (it stops after 7
pairs), a close pair's costs its cap.

Whether a pair is **settled** (not worth replaying) is not decided here from TrueSkill's sigma, which is
over-confident exactly where a one-number model is wrong (intransitive pairs): it is the Bradley-Terry
fit's verdict, :mod:`tournament_manager.settled`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from run_duel.api import STOP_PAIR as PAIR
from run_duel.api import SequentialTest, StopRule
from tournament_manager.rating import Rater, Skill

_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@dataclass(frozen=True)
class DuelCost:
    """Worker-seconds of a duel: ``fixed_s`` (sandbox start and stop) + ``per_match_s`` per match."""

    fixed_s: float
    per_match_s: float

    def __post_init__(self) -> None:
        if self.fixed_s < 0 or self.per_match_s < 0 or self.fixed_s + self.per_match_s <= 0:
            raise ValueError(f"duel costs must be >= 0 and not both 0, got {self}")

    def seconds(self, matches: float) -> float:
        """Worker-seconds of a duel of ``matches`` matches (or of an expected number of them)."""
        return self.fixed_s + self.per_match_s * matches


def wrong_order_probability(a: Skill, b: Skill) -> float:
    """Probability that the competitor with the higher ``mu`` is in fact the weaker one."""
    s2 = a.sigma**2 + b.sigma**2
    if s2 <= 0.0:
        return 0.0
    return 0.5 * math.erfc(abs(a.mu - b.mu) / math.sqrt(2.0 * s2))


def match_information(rater: Rater, a: Skill, b: Skill) -> float:
    """Fisher information one match between ``a`` and ``b`` carries about ``mu_a - mu_b``."""
    c = _SQRT2 * rater.beta
    x = (a.mu - b.mu) / c
    p = 0.5 * math.erfc(-x / _SQRT2)
    q = 1.0 - p
    if p <= 1e-300 or q <= 1e-300:
        return 0.0
    density = _INV_SQRT_2PI * math.exp(-0.5 * x * x)
    return density * density / (p * q) / (c * c)


def duel_value(rater: Rater, a: Skill, b: Skill, matches: int) -> float:
    """Expected ordering doubt a duel of ``matches`` matches removes (see the module docstring)."""
    s2 = a.sigma**2 + b.sigma**2
    if s2 <= 0.0 or matches <= 0:
        return 0.0
    info = match_information(rater, a, b)
    after = 1.0 / (1.0 / s2 + matches * info)
    return wrong_order_probability(a, b) * (s2 - after)


#: ``q`` is rounded to this grid for :func:`expected_matches` (its results are cached per grid point).
Q_GRID = 200


def expected_matches(q: float, matches: int, rule: StopRule | None) -> float:
    """Expected matches a duel capped at ``matches`` plays under ``rule`` (``None``: ``matches``) when
    player 1 wins each match with probability ``q`` (module docstring). The referee looks at the rule
    after each whole pair, so an odd last match is always played."""
    if rule is None or matches < 2 * PAIR:
        return float(matches)
    q = max(q, 1.0 - q)  # the test is symmetric
    played = _pairs_played(round(q * Q_GRID), rule)  # played[c]: expected pairs of a duel capped at c
    pairs = matches // PAIR
    last = len(played) - 1
    expected = played[min(pairs, last)] + max(0, pairs - last) * (played[last] - played[last - 1])
    return PAIR * expected + matches % PAIR


#: Pairs :func:`_pairs_played` follows (a longer duel's further pairs are priced at the last one's chance).
_MAX_PAIRS = 50


@lru_cache(maxsize=16)
def _stop_mask(rule: StopRule) -> np.ndarray:
    """``mask[w, l]``: whether ``rule`` stops a duel after ``w`` pairs won outright by player 1 and ``l``
    by player 2 (split pairs carry no evidence), ``w, l <= _MAX_PAIRS``."""
    mask = np.zeros((_MAX_PAIRS + 1, _MAX_PAIRS + 1), dtype=bool)
    for won in range(_MAX_PAIRS + 1):
        for lost in range(_MAX_PAIRS + 1 - won):
            test = SequentialTest(rule)
            for _ in range(won):
                test.add_pair([(1.0, 0.0), (1.0, 0.0)])
            for _ in range(lost):
                test.add_pair([(0.0, 1.0), (0.0, 1.0)])
            mask[won, lost] = test.decided() is not None
    return mask


@lru_cache(maxsize=4096)
def _pairs_played(q_step: int, rule: StopRule) -> tuple[float, ...]:
    """``played[c]``: expected pairs a duel capped at ``c`` pairs plays (``c = 0 .. _MAX_PAIRS``) when
    player 1 wins each match with probability ``q_step / Q_GRID``, the sum over ``t < c`` of the chance
    that it has not stopped after ``t`` pairs: a walk over (pairs won outright by player 1, by player 2)."""
    q = q_step / Q_GRID
    up, down, even = q * q, (1.0 - q) ** 2, 2.0 * q * (1.0 - q)
    stopped = _stop_mask(rule)
    alive = np.zeros(stopped.shape)
    alive[0, 0] = 1.0
    played = [0.0]
    for _ in range(_MAX_PAIRS):
        played.append(played[-1] + float(alive.sum()))
        nxt = even * alive
        nxt[1:, :] += up * alive[:-1, :]
        nxt[:, 1:] += down * alive[:, :-1]
        nxt[stopped] = 0.0
        alive = nxt
    return tuple(played)


def best_length(
    rater: Rater,
    a: Skill,
    b: Skill,
    cost: DuelCost,
    lengths: Sequence[int],
    stop_rule: StopRule | None = None,
) -> tuple[int, float]:
    """The duel length in ``lengths`` with the highest value per worker-second, and that rate. With
    ``stop_rule`` (the duel stops when decided) each length is priced at its expected matches played."""
    if not lengths:
        raise ValueError("no duel length allowed")
    # duel_value's terms that do not depend on the length, computed once per pair (same arithmetic per
    # length as duel_value, so the same numbers): a round scores hundreds of pairs x every length.
    s2 = a.sigma**2 + b.sigma**2
    if s2 <= 0.0:
        return min(lengths), 0.0
    info = match_information(rater, a, b)
    wrong = wrong_order_probability(a, b)
    q = rater.win_probability(a, b) if stop_rule is not None else 0.5
    best, best_rate = 0, -1.0
    for k in lengths:
        m = expected_matches(q, k, stop_rule)
        rate = wrong * (s2 - 1.0 / (1.0 / s2 + m * info)) / cost.seconds(m) if k > 0 else 0.0
        if rate > best_rate or (rate == best_rate and k < best):
            best, best_rate = k, rate
    return best, best_rate


def even_lengths(low: int, high: int) -> tuple[int, ...]:
    """Even duel lengths from ``low`` to ``high`` (sides swap every match, so both seats are played as
    often); ``low`` is rounded up and ``high`` down to even numbers, at least 2."""
    low = max(2, low + (low % 2))
    high = high - (high % 2)
    if high < low:
        raise ValueError(f"no even duel length between {low} and {high}")
    return tuple(range(low, high + 1, 2))
