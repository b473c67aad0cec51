"""Duels that stop when decided: a sequential test on the match results (``docs/RATINGS.md``).

A duel given a :class:`StopRule` (``play_duel(stop_rule=...)``; the platform passes one for ladder duels
only) may end before its planned length once it is clear which player is stronger. The unit of evidence
is a **pair** of matches, ``2k`` and ``2k + 1``: the first move alternates, and in games with chance the
two are dealt from the same seed with the seats swapped (duplicate play), so a pair is the smallest part
of a duel that is fair to both players. The referee therefore looks at the rule only after an even
number of matches and never splits a duplicate pair.

The rule. Let ``x`` be player 1's share of a pair's points (0, 0.25, 0.5, 0.75 or 1; a draw is half a
point each; a pair in which both players failed, and nobody scored, is skipped).
For an advantage ``d`` (player 1's expected score ``1/2 + d``) the factor ``1 + 4d (x - 1/2)`` is Wald's
likelihood ratio of a coin with ``p = 1/2 + d`` against a fair one when ``x`` is 0 or 1, and a draw
(``x = 1/2``) carries no evidence. The duel's evidence ``E`` is the product of these factors over the
pairs played, averaged over the advantages ``effects`` and their mirror images ``-d`` (player 2 the
stronger). Whenever neither player is better (the expected pair score is 1/2 given everything before),
every factor has mean 1 whatever the score distribution (draws, luck, agents that learn), so ``E`` is a
test martingale and by Ville's inequality ``P(E ever reaches 1 / alpha) <= alpha``: a duel between
equal players stops early with probability at most ``alpha`` over any length. The duel stops after the
first pair at which ``E >= 1 / alpha``; the leader (the sign of the score difference) is the one it
found stronger. A pair with a match lost to our side (``OTHER_ERROR``) is no evidence and is skipped.
The rule never stops a duel because the players look equal: close pairs are where matches inform most.

With the defaults (``alpha`` 0.05, advantages 0.45 and 0.25) the earliest stop is after 7 pairs (14
matches) won outright by the same player; a pair of players who draw, or who each win once from the
same seat, never stops.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PAIR", "SequentialTest", "StopRule"]

#: Matches per unit of evidence (a duplicate pair: the same deal, seats swapped).
PAIR = 2
#: The rule's name in a duel spec and in the duel JSON.
RULE_NAME = "sequential-pairs"


@dataclass(frozen=True)
class StopRule:
    """When a duel may stop early: ``alpha`` bounds the chance that two equal players' duel stops early;
    ``effects`` are the advantages (in expected score per match, each in (0, 0.5)) the test is tuned
    for, weighted equally."""

    alpha: float = 0.05
    effects: tuple[float, ...] = (0.45, 0.25)

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")
        if not self.effects or any(not 0.0 < d < 0.5 for d in self.effects):
            raise ValueError(f"each effect must be in (0, 0.5), got {self.effects}")

    def to_spec(self) -> dict[str, Any]:
        """The rule as JSON (a duel spec and the duel JSON carry it this way)."""
        return {"rule": RULE_NAME, "alpha": self.alpha, "effects": list(self.effects)}

    @classmethod
    def from_spec(cls, spec: StopRule | dict[str, Any] | None) -> StopRule | None:
        """The rule of a duel spec (``None``: the duel plays every match); raises ``ValueError`` for a rule
        it does not know."""
        if spec is None or isinstance(spec, StopRule):
            return spec
        if spec.get("rule", RULE_NAME) != RULE_NAME:
            raise ValueError(f"unknown stop rule {spec.get('rule')!r}")
        default = cls()
        return cls(
            alpha=float(spec.get("alpha", default.alpha)),
            effects=tuple(float(d) for d in spec.get("effects", default.effects)),
        )


@dataclass
class SequentialTest:
    """The running evidence of one duel under ``rule``: feed it pairs with :meth:`add_pair`."""

    rule: StopRule
    pairs: int = 0
    lead: float = 0.0  # player 1's score minus player 2's over the pairs counted
    _log_up: list[float] = field(default_factory=list)
    _log_down: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._log_up = [0.0] * len(self.rule.effects)
        self._log_down = [0.0] * len(self.rule.effects)

    def add_pair(self, scores: Sequence[tuple[float, float]]) -> None:
        """Count one pair: the (player 1, player 2) scores of its matches. ``x`` is player 1's share of the
        points; a pair in which nobody scored (both players failed) is no evidence."""
        p1 = sum(s[0] for s in scores)
        p2 = sum(s[1] for s in scores)
        if p1 + p2 <= 0:
            return
        x = p1 / (p1 + p2)
        self.pairs += 1
        self.lead += p1 - p2
        for i, d in enumerate(self.rule.effects):
            step = 4.0 * d * (x - 0.5)
            self._log_up[i] += math.log1p(step)
            self._log_down[i] += math.log1p(-step)

    @property
    def evidence(self) -> float:
        """``E``: the likelihood ratio averaged over the advantages and both directions (1 at the start)."""
        logs = self._log_up + self._log_down
        top = max(logs)
        return math.exp(top) * sum(math.exp(v - top) for v in logs) / len(logs)

    def decided(self) -> str | None:
        """``"PLAYER_1"`` or ``"PLAYER_2"`` once the evidence reaches ``1 / alpha`` (the leader), else
        ``None``."""
        if self.lead == 0 or self.evidence < 1.0 / self.rule.alpha:
            return None
        return "PLAYER_1" if self.lead > 0 else "PLAYER_2"

    def reason(self) -> str:
        """Why the duel stopped, in words (for the duel JSON)."""
        leader = "player 1" if self.lead > 0 else "player 2"
        return (
            f"{leader} was clearly stronger after {self.pairs} pairs of matches: the sequential test's "
            f"evidence {self.evidence:.1f} reached 1/alpha = {1.0 / self.rule.alpha:g}"
        )
