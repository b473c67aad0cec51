"""Pure replay of duel results into ratings: the rules shared by incremental rating and recomputation.

A duel is applied match by match, in the order the matches were played. From player 1's side:
``PLAYER_1_WIN`` 1.0, ``DRAW`` 0.5, ``PLAYER_2_WIN`` 0.0; an error charged to a player (``PLAYER_x_ERROR``:
timeout, crash, illegal action...) is rated as a loss for that player and counted in its ``errors``;
``OTHER_ERROR`` (our infrastructure) is never charged and teaches nothing. When a competitor shows up
with a revision other than the one its rating last saw, its uncertainty is reset first (a new revision
keeps the mean). ``matches = wins + draws + losses + errors``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from tournament_manager.ids import Id
from tournament_manager.rating import Rater, Skill

#: Rated outcome for player 1 and who is charged an error (1 or 2), per match result.
MATCH_OUTCOMES: dict[str, tuple[float | None, int | None]] = {
    "PLAYER_1_WIN": (1.0, None),
    "PLAYER_2_WIN": (0.0, None),
    "DRAW": (0.5, None),
    "PLAYER_1_ERROR": (0.0, 1),
    "PLAYER_2_ERROR": (1.0, 2),
    "OTHER_ERROR": (None, None),
}


@dataclass
class RatingState:
    """A competitor's rating while results are replayed (mirrors ``core.models.Rating``)."""

    skill: Skill
    matches: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    errors: int = 0
    duels: int = 0
    last_played_at: datetime | None = None
    revision: Id | None = None


@dataclass(frozen=True)
class DuelRecord:
    """What the rating needs to know about one finished duel."""

    duel_id: Id
    competitor_1: Id
    revision_1: Id
    competitor_2: Id
    revision_2: Id
    finished_at: datetime | None
    match_results: Sequence[str] = field(default_factory=tuple)


def _count(state: RatingState, outcome: float, charged: bool) -> None:
    state.matches += 1
    if charged:
        state.errors += 1
    elif outcome == 1.0:
        state.wins += 1
    elif outcome == 0.5:
        state.draws += 1
    else:
        state.losses += 1


def apply_duel(states: dict[Id, RatingState], duel: DuelRecord, rater: Rater) -> bool:
    """Apply ``duel`` to ``states`` (created at the initial skill when missing). Returns whether it counted.

    A duel between two revisions of the same competitor (a challenge) changes nothing and returns False.
    """
    if duel.competitor_1 == duel.competitor_2:
        return False
    sides = []
    for competitor, revision in ((duel.competitor_1, duel.revision_1), (duel.competitor_2, duel.revision_2)):
        state = states.get(competitor)
        if state is None:
            state = states[competitor] = RatingState(rater.initial(), revision=revision)
        elif state.revision != revision:
            if state.revision is not None:
                state.skill = rater.reset_uncertainty(state.skill)
            state.revision = revision
        sides.append(state)
    s1, s2 = sides
    for result in duel.match_results:
        try:
            outcome, charged = MATCH_OUTCOMES[result]
        except KeyError:
            raise ValueError(f"duel {duel.duel_id}: unknown match result {result!r}") from None
        if outcome is None:
            continue
        s1.skill, s2.skill = rater.rate(s1.skill, s2.skill, outcome)
        _count(s1, outcome, charged == 1)
        _count(s2, 1.0 - outcome, charged == 2)
    for s in sides:
        s.duels += 1
        if duel.finished_at is not None and (s.last_played_at is None or duel.finished_at > s.last_played_at):
            s.last_played_at = duel.finished_at
    return True
