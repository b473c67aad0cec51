"""Where competitors stand on their game's leaderboard now: the same rank and score the leaderboard shows
(expected score against the whole field, competitors not yet in the fit after them by mu - 3 sigma), read
from the process's snapshot of the ranking (``tournament_manager.leaderboard``: the version, plus the rows
changed since, when the ratings changed).

The duel page uses it so that it never names another order than the leaderboard's: a duel moves the
TrueSkill numbers (mu, sigma) at once, while the leaderboard's score is fitted to every rated result together.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from core.models import Environment
from web import queries


@dataclass(frozen=True)
class Standing:
    """One competitor's line of the leaderboard, as the page says it."""

    rank: int
    total: int
    tied: bool  # another competitor shares the rank (the arena does not know their order yet)
    score: float | None  # expected share of points against the whole field; None until it is in the fit
    lower: float | None
    upper: float | None

    @property
    def score_percent(self) -> str:
        return "" if self.score is None else f"{round(self.score * 100)} %"

    @property
    def interval_percent(self) -> str:
        if self.lower is None or self.upper is None:
            return ""
        return f"{round(self.lower * 100)}\u2013{round(self.upper * 100)} %"

    def sentence(self) -> str:
        """What the leaderboard says of it, in words."""
        place = f"{'tied at ' if self.tied else ''}#{self.rank} of {self.total}"
        if self.score is None:
            return (
                f"On the leaderboard it is {place} for now: the leaderboard ranks by the score expected "
                "against the whole field, fitted to every rated result together, and that fit has not "
                "included it yet (until then it is placed by its cautious skill \u03bc \u2212 3\u03c3)."
            )
        return (
            f"On the leaderboard it is now {place}, with a score of {self.score_percent} (95 % interval "
            f"{self.interval_percent}): the share of points it can expect against an opponent drawn from "
            "the whole field, fitted to every rated result together, so no single duel moves it by a fixed "
            "amount."
        )


def standings(environment: Environment, competitor_ids: list[int]) -> dict[int, Standing]:
    """``{competitor id: Standing}`` for those of ``competitor_ids`` on the game's leaderboard."""
    rows = queries.leaderboard(environment)
    counts = Counter(row.rank for row in rows)
    wanted = set(competitor_ids)
    return {
        row.competitor_id: Standing(
            rank=row.rank,
            total=len(rows),
            tied=counts[row.rank] > 1,
            score=row.field_score,
            lower=row.field_score_lower,
            upper=row.field_score_upper,
        )
        for row in rows
        if row.competitor_id in wanted
    }
