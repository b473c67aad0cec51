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

Whether a pair is **settled** (not worth replaying) is not decided here from TrueSkill's sigma, which is
over-confident exactly where a one-number model is wrong (intransitive pairs): it is the Bradley-Terry
fit's verdict, :mod:`tournament_manager.settled`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

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

    def seconds(self, matches: int) -> float:
        """Worker-seconds of a duel of ``matches`` matches."""
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


def best_length(
    rater: Rater, a: Skill, b: Skill, cost: DuelCost, lengths: Sequence[int]
) -> tuple[int, float]:
    """The duel length in ``lengths`` with the highest value per worker-second, and that rate."""
    if not lengths:
        raise ValueError("no duel length allowed")
    # duel_value's terms that do not depend on the length, computed once per pair (same arithmetic per
    # length as duel_value, so the same numbers): a round scores hundreds of pairs x every length.
    s2 = a.sigma**2 + b.sigma**2
    if s2 <= 0.0:
        return min(lengths), 0.0
    info = match_information(rater, a, b)
    wrong = wrong_order_probability(a, b)
    best, best_rate = 0, -1.0
    for k in lengths:
        rate = wrong * (s2 - 1.0 / (1.0 / s2 + k * info)) / cost.seconds(k) if k > 0 else 0.0
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
