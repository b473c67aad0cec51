"""Read-side queries for pages and the API. Each runs a fixed number of SQL queries (no N+1)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Count, F, Max, OuterRef, Prefetch, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from core.models import (
    Build,
    Competitor,
    Duel,
    Environment,
    Rating,
    RatingHistory,
    Revision,
    SmokeTest,
    Tournament,
    TournamentParticipant,
)
from tournament_manager.leaderboard import LeaderboardRow
from tournament_manager.leaderboard import leaderboard as tm_leaderboard
from web.charts import RatingPoint

#: How many rating-history points the competitor chart shows (the most recent ones).
CHART_POINTS = 400
RECENT_DUELS = 20


def can_see_private(user: Any, owner_id: int) -> bool:
    """Owners and staff see private sources and logs; nobody else does."""
    return bool(user and user.is_authenticated and (user.is_staff or user.pk == owner_id))


def leaderboard_version(environment: Environment) -> str:
    """A key that changes whenever the game's ratings change (one aggregate query over the rating rows).

    Pages cache the rendered leaderboard under it, together with the current minute so that "last
    played" times and competitor changes that do not touch ratings are at most a minute old.
    """
    agg = Rating.objects.filter(environment=environment).aggregate(m=Max("updated_at"), n=Count("pk"))
    stamp = agg["m"].isoformat() if agg["m"] else "none"
    return f"{environment.pk}:{agg['n']}:{stamp}"


def leaderboard(environment: Environment) -> list[LeaderboardRow]:
    """The ranked rows of a game (``tournament_manager``'s TrueSkill + Bradley-Terry tie-aware ranking).

    A fixed number of queries whatever the number of competitors (2, or 3 when the tie fit is recomputed).
    """
    return tm_leaderboard(environment)


def environments_with_counts() -> list[Environment]:
    """Active games with ``num_competitors`` (playable) and ``num_duels`` (finished), in one query."""
    playable = Competitor.objects.filter(
        environment=OuterRef("pk"), status=Competitor.Status.ACTIVE, current_revision__isnull=False
    )
    finished = Duel.objects.filter(environment=OuterRef("pk"), state=Duel.State.FINISHED)
    return list(
        Environment.objects.filter(is_active=True)
        .annotate(
            num_competitors=Coalesce(
                Subquery(playable.values("environment").annotate(c=Count("pk")).values("c")[:1]), 0
            ),
            num_duels=Coalesce(
                Subquery(finished.values("environment").annotate(c=Count("pk")).values("c")[:1]), 0
            ),
        )
        .order_by("name")
    )


def duels_with_players() -> QuerySet[Duel]:
    """Duels with both players' competitors and owners joined in (for listings)."""
    return Duel.objects.select_related(
        "environment",
        "revision_1__competitor__owner",
        "revision_2__competitor__owner",
    ).defer("player_1_log", "player_2_log", "error_msg")


def recent_duels(environment: Environment | None = None, limit: int = 10) -> list[Duel]:
    """The last finished duels (of one game, or of all)."""
    qs = duels_with_players().filter(state=Duel.State.FINISHED)
    if environment is not None:
        qs = qs.filter(environment=environment)
    return list(qs.order_by("-finished_at")[:limit])


def recent_revisions(limit: int = 8) -> list[Revision]:
    """The latest uploads, newest first."""
    return list(
        Revision.objects.select_related("competitor__owner", "competitor__environment").order_by(
            "-created_at"
        )[:limit]
    )


def tournaments(environment: Environment, limit: int = 3) -> list[Tournament]:
    """The latest editions with their standings (participants pre-fetched, best first)."""
    participants = TournamentParticipant.objects.select_related("revision__competitor__owner").order_by(
        F("rank").asc(nulls_last=True), "-points", "-score"
    )
    return list(
        Tournament.objects.filter(environment=environment)
        .order_by("-edition")
        .prefetch_related(Prefetch("participants", queryset=participants))[:limit]
    )


def competitor_revisions(competitor: Competitor, with_logs: bool) -> list[Revision]:
    """All revisions of a competitor, newest first, with their builds and smoke tests pre-fetched.

    Logs (large text) are loaded only when ``with_logs`` (owner or staff).
    """
    builds = Build.objects.order_by("-created_at")
    tests = SmokeTest.objects.order_by("-created_at").defer("duel_json")
    if not with_logs:
        builds = builds.defer("log")
        tests = tests.defer("log")
    return list(
        competitor.revisions.order_by("-version").prefetch_related(
            Prefetch("builds", queryset=builds), Prefetch("smoke_tests", queryset=tests)
        )
    )


def rating_points(rating: Rating | None) -> list[RatingPoint]:
    """The last ``CHART_POINTS`` history entries of a rating, oldest first."""
    if rating is None:
        return []
    rows = list(
        RatingHistory.objects.filter(rating=rating)
        .order_by("-created_at", "-pk")
        .values_list("created_at", "mu", "sigma")[:CHART_POINTS]
    )
    rows.reverse()
    return [RatingPoint(when=w, mu=m, sigma=s) for w, m, s in rows]


def _involving(revision_ids: list[int]) -> Q:
    # By revision ids (indexed foreign keys) rather than a join to the competitor: an OR across joined
    # tables would scan every duel.
    return Q(revision_1_id__in=revision_ids) | Q(revision_2_id__in=revision_ids)


def competitor_duels(
    competitor: Competitor, revision_ids: list[int], limit: int = RECENT_DUELS
) -> list[Duel]:
    """A competitor's latest duels (any state), newest first; ``revision_ids`` are all its revisions."""
    if not revision_ids:
        return []
    return list(
        duels_with_players()
        .filter(_involving(revision_ids))
        .order_by(F("finished_at").desc(nulls_first=True), "-created_at")[:limit]
    )


@dataclass
class HeadToHead:
    """A competitor's record against one opponent over all finished duels (match counts)."""

    opponent: Competitor
    duels: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    errors: int = 0
    opponent_errors: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def matches(self) -> int:
        """Matches played against this opponent."""
        return self.wins + self.draws + self.losses + self.errors + self.opponent_errors


def head_to_head(competitor: Competitor, revision_ids: list[int]) -> list[HeadToHead]:
    """Aggregate results per opponent (three queries whatever the number of duels)."""
    if not revision_ids:
        return []
    finished = Duel.objects.filter(state=Duel.State.FINISHED)
    as_p1 = (
        finished.filter(revision_1_id__in=revision_ids)
        .values(opp=F("revision_2__competitor"))
        .annotate(
            n=Count("pk"),
            w=Sum("player_1_wins"),
            d=Sum("draws"),
            lo=Sum("player_2_wins"),
            e=Sum("player_1_errors"),
            oe=Sum("player_2_errors"),
        )
    )
    as_p2 = (
        finished.filter(revision_2_id__in=revision_ids)
        .values(opp=F("revision_1__competitor"))
        .annotate(
            n=Count("pk"),
            w=Sum("player_2_wins"),
            d=Sum("draws"),
            lo=Sum("player_1_wins"),
            e=Sum("player_2_errors"),
            oe=Sum("player_1_errors"),
        )
    )
    totals: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0])
    for row in [*as_p1, *as_p2]:
        if row["opp"] == competitor.pk:
            continue  # self-play is not a head-to-head
        t = totals[row["opp"]]
        for i, key in enumerate(("n", "w", "d", "lo", "e", "oe")):
            t[i] += row[key] or 0
    if not totals:
        return []
    opponents = Competitor.objects.select_related("owner").in_bulk(list(totals))
    rows = [
        HeadToHead(opponents[k], *v)
        for k, v in totals.items()
        if k in opponents  # a competitor deleted meanwhile
    ]
    rows.sort(key=lambda h: (-h.duels, h.opponent.name))
    return rows


def latest(items: Any) -> Any:
    """First element of a pre-fetched, newest-first related list, or ``None`` (no query)."""
    items = list(items.all()) if hasattr(items, "all") else list(items)
    return items[0] if items else None


def timestamp(value: datetime | None) -> str:
    """ISO timestamp or empty string."""
    return value.isoformat() if value else ""
