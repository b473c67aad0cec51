"""Season finals with progressive cuts (as Halite's finals), pure: no Django.

The top finalists of the ladder start with their ladder mean and the rater's initial uncertainty
(``Rater.reset_uncertainty``: re-seeded, so the finals decide and the ladder only breaks the first ties).
Each round is a round robin among the finalists still in; after it, they are ordered by the finals'
conservative rating (mu - 3 sigma, ties by seed) and the bottom share is cut, never below ``last``.
A round played by ``last`` finalists or fewer is the last one. The final table puts the finalists of
the last round first (by rating), then those cut later before those cut earlier (each group by rating).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tournament_manager.ids import Id


@dataclass(frozen=True)
class FinalsRules:
    """``cut``: the share of a round's finalists cut after it; ``last``: the size of the last round."""

    cut: float = 0.5
    last: int = 4

    def __post_init__(self) -> None:
        if not 0.0 < self.cut < 1.0:
            raise ValueError(f"cut must be in (0, 1), got {self.cut}")
        if self.last < 2:
            raise ValueError(f"the last round needs at least two finalists, got {self.last}")

    def kept_after(self, playing: int) -> int:
        """How many of ``playing`` finalists go on to the next round; 0 when this round was the last."""
        if playing <= self.last:
            return 0
        cut = max(1, math.floor(playing * self.cut))
        return max(self.last, playing - cut)

    def rounds(self, finalists: int) -> list[int]:
        """The number of finalists playing each round, e.g. 16 -> [16, 8, 4]."""
        sizes = []
        playing = finalists
        while playing >= 2:
            sizes.append(playing)
            playing = self.kept_after(playing)
        return sizes


@dataclass(frozen=True)
class FinalistLine:
    """What ordering a finalist needs: its id, ladder seed, finals rating and the round it was cut in."""

    id: Id
    seed: int
    mu: float
    sigma: float
    cut_after_round: int | None = None

    @property
    def conservative(self) -> float:
        return self.mu - 3.0 * self.sigma


def order_by_rating(lines: Sequence[FinalistLine]) -> list[FinalistLine]:
    """Best first: highest ``mu - 3 sigma``, then the better ladder seed."""
    return sorted(lines, key=lambda f: (-round(f.conservative, 9), f.seed))


def final_table(lines: Sequence[FinalistLine]) -> list[FinalistLine]:
    """The finals' table, winner first: the last round's finalists, then each cut group, latest cut first."""

    def group(f: FinalistLine) -> float:
        return math.inf if f.cut_after_round is None else f.cut_after_round

    ordered = order_by_rating(lines)
    return sorted(ordered, key=group, reverse=True)  # stable: rating order kept within a group
