"""The leaderboard of an environment: TrueSkill ratings ranked by mu - 3 sigma, with statistical ties.

Rows are ordered by conservative skill. Ranks come from
:func:`tournament_manager.bradley_terry.rank_with_ties` over the environment's stored Bradley-Terry fit
(95 % intervals; :mod:`tournament_manager.tie_fit` computes it in the background after ratings change):
neighbours whose interval overlaps their tie group leader's share its rank. Building the leaderboard
never fits anything: it reads the latest stored fit (possibly a little older than the ratings; a
competitor the fit has not seen yet gets its own rank), and when no fit exists at all it shows every
competitor on its own rank and requests one. One database query whatever the number of competitors.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from core.models import Environment, Rating
from tournament_manager.bradley_terry import rank_with_ties
from tournament_manager.tie_fit import request_refresh, stored_fit


@dataclass(frozen=True)
class LeaderboardRow:
    """One line of the leaderboard."""

    rank: int
    competitor_id: int
    competitor: str
    owner: str
    version: int | None
    is_paused: bool
    mu: float
    sigma: float
    skill: float
    matches: int
    wins: int
    draws: int
    losses: int
    errors: int
    last_played_at: datetime | None
    bt_strength: float | None
    bt_lower: float | None
    bt_upper: float | None
    #: The rating is still uncertain (``sigma`` above ``TM_PROVISIONAL_SIGMA``): its place may change.
    provisional: bool = False


#: Default of ``TM_PROVISIONAL_SIGMA``: a rating is provisional while its sigma is above this (TrueSkill
#: units; its 95 % interval is then wider than about one beta, the skill gap of a 76 % win chance).
PROVISIONAL_SIGMA = 2.0


def provisional_threshold() -> float:
    """The sigma above which a rating is shown as provisional (``TM_PROVISIONAL_SIGMA``)."""
    return float(getattr(settings, "TM_PROVISIONAL_SIGMA", PROVISIONAL_SIGMA))


def bradley_terry_intervals(environment_id: int) -> dict[Hashable, tuple[float, float, float]]:
    """competitor id -> (strength, lower, upper) from the stored background fit; {} when there is none yet."""
    stored = stored_fit(environment_id)
    return dict(stored.intervals) if stored is not None else {}


def leaderboard(environment: Environment | int) -> list[LeaderboardRow]:
    """Every rated competitor of ``environment``, best first, with tie-aware ranks."""
    environment_id = environment if isinstance(environment, int) else environment.pk
    ratings = list(
        Rating.objects.filter(environment_id=environment_id)
        .select_related("competitor__owner", "competitor__current_revision")
        .order_by("-skill", "-mu", "competitor_id")
    )
    stored = stored_fit(environment_id)
    intervals: dict[Hashable, tuple[float, float, float]] = dict(stored.intervals) if stored else {}
    if stored is None and any(r.matches for r in ratings):
        request_refresh(environment_id)  # debounced: one background fit, however many requests ask
    ranks = rank_with_ties(
        [r.competitor_id for r in ratings],
        {c: (lo, hi) for c, (_, lo, hi) in intervals.items()},
    )
    provisional_sigma = provisional_threshold()
    rows = []
    for r in ratings:
        comp = r.competitor
        bt = intervals.get(r.competitor_id)
        rows.append(
            LeaderboardRow(
                rank=ranks[r.competitor_id],
                competitor_id=r.competitor_id,
                competitor=comp.name,
                owner=comp.owner.public_name,
                version=comp.current_revision.version if comp.current_revision else None,
                is_paused=comp.status != comp.Status.ACTIVE,
                mu=r.mu,
                sigma=r.sigma,
                skill=r.skill,
                matches=r.matches,
                wins=r.wins,
                draws=r.draws,
                losses=r.losses,
                errors=r.errors,
                last_played_at=r.last_played_at,
                bt_strength=bt[0] if bt else None,
                bt_lower=bt[1] if bt else None,
                bt_upper=bt[2] if bt else None,
                provisional=r.sigma > provisional_sigma,
            )
        )
    return rows
