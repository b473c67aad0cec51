"""A duel seen by its players: how each side scored (on the board or by the opponent's errors), who won.

The duel JSON counts ``player_x_wins`` only for matches won on the board; a match the opponent lost by
an error (timeout, crash, illegal move...) scores 1 for the other side but is counted in the opponent's
``player_y_errors``. A page that printed "Wins 0 · Score 10.0" left the reader guessing; this says it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from core.models import Duel, Match

_ERROR_OF = {1: Match.Result.PLAYER_1_ERROR, 2: Match.Result.PLAYER_2_ERROR}


@dataclass
class Side:
    """One player of a duel, from its own point of view."""

    seat: int  # 1 or 2
    name: str
    competitor_id: int
    version: int
    owner: str
    score: float | None
    board_wins: int
    draws: int
    losses: int
    own_errors: int
    wins_by_opponent_errors: int
    opponent_error_kinds: list[tuple[str, int]] = field(default_factory=list)
    own_error_kinds: list[tuple[str, int]] = field(default_factory=list)
    rating: Any = None  # a web.queries.RatingChange, when the duel was rated
    rating_story: list[str] = field(default_factory=list)  # rating_story(): the change in words
    standing: Any = None  # a web.standing.Standing: its leaderboard rank and score now

    @property
    def wins(self) -> int:
        """Matches scored 1: on the board plus those the opponent lost by an error."""
        return self.board_wins + self.wins_by_opponent_errors


def _kinds(matches: list[Match], result: str) -> list[tuple[str, int]]:
    counts = Counter(m.error_kind or "ERROR" for m in matches if m.result == result)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def sides(duel: Duel, matches: list[Match]) -> tuple[Side, Side]:
    """Both players' summaries. Error kinds come from ``matches`` (those recorded so far)."""
    out = []
    for seat, other in ((1, 2), (2, 1)):
        revision = duel.revision_1 if seat == 1 else duel.revision_2
        out.append(
            Side(
                seat=seat,
                name=revision.competitor.name,
                competitor_id=revision.competitor_id,
                version=revision.version,
                owner=revision.competitor.owner.public_name,
                score=getattr(duel, f"player_{seat}_score"),
                board_wins=getattr(duel, f"player_{seat}_wins"),
                draws=duel.draws,
                losses=getattr(duel, f"player_{other}_wins"),
                own_errors=getattr(duel, f"player_{seat}_errors"),
                wins_by_opponent_errors=getattr(duel, f"player_{other}_errors"),
                opponent_error_kinds=_kinds(matches, _ERROR_OF[other]),
                own_error_kinds=_kinds(matches, _ERROR_OF[seat]),
            )
        )
    return out[0], out[1]


def headline(duel: Duel, side_1: Side, side_2: Side) -> str:
    """One sentence: who won and how, e.g. "minimax won 10 : 0, every match by random's errors (CRASH)"."""
    if duel.state != Duel.State.FINISHED:
        return ""
    if duel.result == Duel.Result.ERROR:
        return "No result: the duel failed on our side; neither player is charged."
    if duel.result == Duel.Result.DRAW:
        return f"Draw, {_score(side_1)} : {_score(side_2)}."
    winner, loser = (side_1, side_2) if duel.result == Duel.Result.PLAYER_1_WIN else (side_2, side_1)
    text = f"{winner.name} won {_score(winner)} : {_score(loser)}"
    if winner.wins_by_opponent_errors:
        kinds = ", ".join(kind for kind, _ in winner.opponent_error_kinds) or "errors"
        if winner.board_wins == 0 and winner.draws == 0 and loser.board_wins == 0:
            text += f", every match by {loser.name}'s errors ({kinds})"
        else:
            text += (
                f": {winner.board_wins} on the board, {winner.wins_by_opponent_errors} by {loser.name}'s "
                f"errors ({kinds})"
            )
    return text + "."


def stop_note(duel: Duel, side_1: Side, side_2: Side) -> str:
    """How long a duel that could stop when decided (``run_duel.stopping``) played, in one sentence; empty
    for a duel without a stop rule or without a result."""
    if duel.state != Duel.State.FINISHED or duel.stop_rule is None or duel.result == Duel.Result.ERROR:
        return ""
    planned = duel.planned_matches or duel.num_matches
    stopped = duel.stopped_early
    if not stopped:
        return (
            f"Played all {planned} planned matches: the duel stops early only once one player is clearly "
            "stronger, and it was not decided before."
        )
    leader = side_1 if stopped.get("leader") == "PLAYER_1" else side_2
    alpha = float(duel.stop_rule.get("alpha") or 0.05)
    after = stopped.get("after_matches", duel.num_matches)
    evidence = float(stopped.get("evidence", 0.0))
    return (
        f"Stopped early after {after} of {planned} matches, decided: {leader.name} was clearly stronger "
        f"(the sequential test's evidence {evidence:g} reached {1.0 / alpha:g}; two equal players stop "
        f"early at most {alpha:.0%} of the time)."
    )


def _score(side: Side) -> str:
    return "-" if side.score is None else f"{side.score:g}"


def outcome_for(duel: Duel, competitor_id: int) -> str:
    """``won``, ``lost``, ``draw``, ``error`` (ours) or the duel's state, from one competitor's side."""
    if duel.state != Duel.State.FINISHED or not duel.result:
        return duel.get_state_display()
    if duel.result == Duel.Result.DRAW:
        return "draw"
    if duel.result == Duel.Result.ERROR:
        return "error"
    is_1 = duel.revision_1.competitor_id == competitor_id
    return "won" if (duel.result == Duel.Result.PLAYER_1_WIN) == is_1 else "lost"


#: The rating's symbols, as pages show them.
_MU, _SIGMA = "\u03bc", "\u03c3"
_SCORE = f"{_MU} \u2212 3{_SIGMA}"


def _signed(value: float) -> str:
    return f"{value:+.2f}"


def rating_story(change: Any, outcome: str) -> list[str]:
    """What a rated duel did to one side's rating, in sentences a newcomer can follow: the result moved the
    skill estimate mu; every duel makes the arena surer of it (sigma shrinks); the cautious skill
    mu - 3 sigma (which picks opponents) therefore can rise after a loss (and fall after a win when sigma
    grew). The leaderboard's own rank and score are not per duel: the page says them from
    :mod:`web.standing`.
    ``outcome`` is :func:`outcome_for`'s."""
    said = {"won": "It won this duel", "lost": "It lost this duel", "draw": "This duel was a draw"}
    lead = said.get(outcome, "This duel was rated")
    mu = change.mu_delta
    if abs(mu) < 0.005:
        moved = f"its skill estimate {_MU} did not move"
    else:
        moved = f"its skill estimate {_MU} {'rose' if mu > 0 else 'fell'} by {abs(mu):.2f}"
    out = [f"{lead}: {moved} (from {change.mu_before:.2f} to {change.mu_after:.2f})."]
    sigma = change.sigma_after - change.sigma_before
    if sigma < -0.005:
        out.append(
            f"Each result makes the arena surer of its skill: its uncertainty {_SIGMA} went from "
            f"{change.sigma_before:.2f} to {change.sigma_after:.2f} (lower is surer)."
        )
    elif sigma > 0.005:
        out.append(
            f"Its uncertainty {_SIGMA} grew from {change.sigma_before:.2f} to {change.sigma_after:.2f}: the "
            "arena is a little less sure of its skill (lower is surer)."
        )
    skill = change.skill_delta
    text = (
        f"Its cautious skill {_SCORE} (a skill it has almost surely, which picks its opponents): "
        f"{change.skill_before:.2f} to {change.skill_after:.2f}, {_signed(skill)}"
    )
    if (skill > 0.005 and mu < -0.005) or (skill < -0.005 and mu > 0.005):
        text += (
            ", because the growing certainty outweighed the result"
            if skill > 0
            else ", because the lost certainty outweighed the result"
        )
    out.append(text + ".")
    return out
