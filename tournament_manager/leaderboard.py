"""The leaderboard of an environment: ranked by the Bradley-Terry fit's expected score against the field.

What a rank estimates (``docs/RATINGS.md``): each competitor's expected score (win 1, draw 1/2) against an
opponent drawn uniformly from the field, under a Bradley-Terry model fitted to every stored rated result
with every pair that played weighted the same (:mod:`tournament_manager.settled`): the round robin's
standings in a transitive game, whatever pairs the ladder chose to play. Rows the stored fit has seen are
ordered by it; two rows share a rank (a statistical tie, "=") unless the fit's bootstrap interval of
their strength difference excludes 0 (comparing each row with its tie group's leader). Competitors the
fit has not seen yet (rated since, or never) follow, by TrueSkill's ``mu - 3 sigma``, each on its own
rank. TrueSkill still drives matchmaking and is shown beside.

Building the leaderboard never fits anything: it reads the latest stored fit (possibly a little older
than the ratings), and when no fit exists at all it orders by ``mu - 3 sigma`` and requests one. One
database query whatever the number of competitors.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from core.models import Environment, Rating
from tournament_manager.settled import rank_by_fit
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
    #: Expected score against the whole field (what the rank estimates) and its 95 % interval; None when
    #: the stored fit has not seen the competitor.
    field_score: float | None = None
    field_score_lower: float | None = None
    field_score_upper: float | None = None


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

    # Stable: the fit's order first, then the ones it has not seen in the query's mu - 3 sigma order.
    def place(r: Rating) -> tuple[int, float]:
        fitted = intervals.get(r.competitor_id)
        return (0, -fitted[0]) if fitted else (1, 0.0)

    ratings.sort(key=place)
    fitted = [r.competitor_id for r in ratings if r.competitor_id in intervals]
    ranks = rank_by_fit(fitted, stored.knows_order) if stored is not None else {}
    ranks.update({r.competitor_id: k for k, r in enumerate(ratings, start=1) if r.competitor_id not in ranks})
    scores = stored.scores if stored is not None else {}
    provisional_sigma = provisional_threshold()
    rows = []
    for r in ratings:
        comp = r.competitor
        bt = intervals.get(r.competitor_id)
        score = scores.get(r.competitor_id)
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
                field_score=score[0] if score else None,
                field_score_lower=score[1] if score else None,
                field_score_upper=score[2] if score else None,
            )
        )
    return rows


@dataclass(frozen=True)
class PopulationRow:
    """One agent of the population view: its mass in the Nash mixture and its payoff against it."""

    competitor_id: int
    competitor: str
    mass: float
    payoff: float


@dataclass(frozen=True)
class Intransitivity:
    """What one number per agent hides (:mod:`tournament_manager.intransitivity`), from the stored fit."""

    #: (a, b, c, score a-b, score b-c, score c-a) with names: a beats b beats c beats a, all significant.
    cycles: list[tuple[str, str, str, float, float, float]]
    #: The population view, agents in the Nash mixture first (heaviest first), then by payoff.
    population: list[PopulationRow]
    #: Whether the game's strategies cycle (Goofspiel, Leduc Hold'em): the page shows the population view.
    cyclic_game: bool


def intransitivity(environment: Environment) -> Intransitivity:
    """Significant head-to-head cycles and the Nash population view of the stored fit (one query for
    the names; nothing fitted)."""
    from core.models import Competitor
    from tournament_manager.intransitivity import CYCLIC_GAMES

    stored = stored_fit(environment.pk)
    cycles = list(stored.cycles) if stored else []
    population = dict(stored.population) if stored else {}
    wanted = {c for cyc in cycles for c in (cyc.a, cyc.b, cyc.c)} | set(population)
    names = dict(Competitor.objects.filter(pk__in=wanted).values_list("pk", "name")) if wanted else {}
    rows = [
        PopulationRow(cid, names.get(cid, f"#{cid}"), mass, payoff)
        for cid, (mass, payoff) in population.items()
    ]
    rows.sort(key=lambda r: (-r.mass, -r.payoff, r.competitor))
    return Intransitivity(
        [
            (
                names.get(c.a, f"#{c.a}"),
                names.get(c.b, f"#{c.b}"),
                names.get(c.c, f"#{c.c}"),
                c.ab,
                c.bc,
                c.ca,
            )
            for c in cycles
        ],
        rows,
        environment.slug in CYCLIC_GAMES,
    )
