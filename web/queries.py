"""Read-side queries for pages and the API. Each runs a fixed number of SQL queries (no N+1)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict

from django.db.models import Count, F, Max, OuterRef, Prefetch, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from core.models import (
    Build,
    Competitor,
    Duel,
    Environment,
    PairRecord,
    Rating,
    RatingHistory,
    Revision,
    SmokeTest,
    StoredAgentData,
    Tournament,
    TournamentParticipant,
)
from core.models.rating import DEFAULT_MU, DEFAULT_SIGMA
from tournament_manager.leaderboard import Intransitivity, LeaderboardRow
from tournament_manager.leaderboard import intransitivity as tm_intransitivity
from tournament_manager.leaderboard import leaderboard as tm_leaderboard
from web.charts import RatingPoint

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

#: How many rating-history points the competitor chart shows (the most recent ones).
CHART_POINTS = 400


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


def intransitivity(environment: Environment) -> Intransitivity:
    """Significant head-to-head cycles and the population view of a game (stored with its tie fit; at
    most one query, for the names)."""
    return tm_intransitivity(environment)


class _GameCounts(TypedDict):
    num_competitors: int
    num_duels: int


def environments_with_counts() -> list[WithAnnotations[Environment, _GameCounts]]:
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
    """Results per opponent over every finished duel (ladder, tournament and challenges), from the per-pair
    counts the record path keeps (``PairRecord``): two queries, one row per opponent, whatever the number
    of duels. ``revision_ids`` only says whether the competitor ever had a revision."""
    if not revision_ids:
        return []
    totals: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0])
    pairs = PairRecord.objects.filter(Q(low=competitor) | Q(high=competitor)).values_list(
        "low_id", "high_id", "duels", "low_wins", "high_wins", "draws", "low_errors", "high_errors"
    )
    for low, high, n, low_wins, high_wins, draws, low_errors, high_errors in pairs:
        if low == competitor.pk:  # (duels, wins, draws, losses, errors, opponent errors) from our side
            row, opponent = (n, low_wins, draws, high_wins, low_errors, high_errors), high
        else:
            row, opponent = (n, high_wins, draws, low_wins, high_errors, low_errors), low
        t = totals[opponent]
        for i, value in enumerate(row):
            t[i] += value
    if not totals:
        return []
    opponents = Competitor.objects.select_related("owner").in_bulk(list(totals))
    rows = [
        HeadToHead(opponents[k], v[0], v[1], v[2], v[3], v[4], v[5])
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


# --- duel history, rating changes, ratings per revision ---------------------------------------------

#: Outcome filters of a competitor's duel history (the competitor's point of view).
OUTCOMES = ("won", "lost", "draw")
#: Error filters: duels where the competitor erred, where its opponent did, or either.
ERROR_FILTERS = ("own", "opponent", "any")


def duel_history(
    competitor: Competitor,
    revision_ids: list[int],
    *,
    opponent_id: int | None = None,
    outcome: str = "",
    errors: str = "",
) -> QuerySet[Duel]:
    """A competitor's duels, newest first (unfinished ones on top), filtered by opponent (a competitor id),
    outcome (``won``, ``lost``, ``draw``) and errors (``own``, ``opponent``, ``any``). Lazy: page it."""
    if not revision_ids:
        return Duel.objects.none()
    as_1 = Q(revision_1_id__in=revision_ids)
    as_2 = Q(revision_2_id__in=revision_ids)
    qs = duels_with_players().filter(as_1 | as_2)
    if opponent_id is not None:
        against_1 = as_1 & Q(revision_2__competitor_id=opponent_id)
        qs = qs.filter(against_1 | (as_2 & Q(revision_1__competitor_id=opponent_id)))
    p1_won, p2_won = Q(result=Duel.Result.PLAYER_1_WIN), Q(result=Duel.Result.PLAYER_2_WIN)
    if outcome == "won":
        qs = qs.filter((as_1 & p1_won) | (as_2 & p2_won))
    elif outcome == "lost":
        qs = qs.filter((as_1 & p2_won) | (as_2 & p1_won))
    elif outcome == "draw":
        qs = qs.filter(result=Duel.Result.DRAW)
    own_errors = (as_1 & Q(player_1_errors__gt=0)) | (as_2 & Q(player_2_errors__gt=0))
    their_errors = (as_1 & Q(player_2_errors__gt=0)) | (as_2 & Q(player_1_errors__gt=0))
    if errors == "own":
        qs = qs.filter(own_errors)
    elif errors == "opponent":
        qs = qs.filter(their_errors)
    elif errors == "any":
        qs = qs.filter(own_errors | their_errors)
    return qs.order_by(F("finished_at").desc(nulls_first=True), "-created_at", "-pk")


def opponents(competitor: Competitor, revision_ids: list[int]) -> list[Competitor]:
    """Every competitor this one has a duel with (for the history's opponent filter), by name; 2 queries."""
    if not revision_ids:
        return []
    as_1 = Duel.objects.filter(revision_1_id__in=revision_ids).values_list("revision_2__competitor_id")
    as_2 = Duel.objects.filter(revision_2_id__in=revision_ids).values_list("revision_1__competitor_id")
    ids = {row[0] for row in as_1} | {row[0] for row in as_2}
    ids.discard(competitor.pk)
    return list(Competitor.objects.filter(pk__in=ids).select_related("owner").order_by("name", "pk"))


@dataclass(frozen=True)
class RatingChange:
    """A competitor's rating just before and just after one duel was applied."""

    mu_before: float
    sigma_before: float
    mu_after: float
    sigma_after: float
    at: datetime | None = None

    @property
    def skill_before(self) -> float:
        """mu - 3 sigma before."""
        return self.mu_before - 3 * self.sigma_before

    @property
    def skill_after(self) -> float:
        """mu - 3 sigma after."""
        return self.mu_after - 3 * self.sigma_after

    @property
    def skill_delta(self) -> float:
        """The change of mu - 3 sigma."""
        return self.skill_after - self.skill_before

    @property
    def mu_delta(self) -> float:
        """The change of mu, the skill estimate: what the duel's result moved."""
        return self.mu_after - self.mu_before


def _previous(field_name: str) -> Subquery:
    """The same rating's history entry just before the outer one (by time, then id)."""
    earlier = RatingHistory.objects.filter(rating=OuterRef("rating")).filter(
        Q(created_at__lt=OuterRef("created_at")) | Q(created_at=OuterRef("created_at"), pk__lt=OuterRef("pk"))
    )
    return Subquery(earlier.order_by("-created_at", "-pk").values(field_name)[:1])


def rating_changes(rating: Rating | None, duel_ids: list[int]) -> dict[int, RatingChange]:
    """How each of these duels moved ``rating`` (one query). Duels it did not rate are left out; before
    its first duel a competitor had the initial rating."""
    if rating is None or not duel_ids:
        return {}
    rows = (
        RatingHistory.objects.filter(rating=rating, duel_id__in=duel_ids)
        .annotate(prev_mu=_previous("mu"), prev_sigma=_previous("sigma"))
        .values_list("duel_id", "mu", "sigma", "prev_mu", "prev_sigma", "created_at")
    )
    changes = {}
    for duel_id, mu, sigma, prev_mu, prev_sigma, at in rows:
        changes[duel_id] = RatingChange(
            mu_before=DEFAULT_MU if prev_mu is None else prev_mu,
            sigma_before=DEFAULT_SIGMA if prev_sigma is None else prev_sigma,
            mu_after=mu,
            sigma_after=sigma,
            at=at,
        )
    return changes


def duel_rating_changes(duel: Duel) -> list[RatingChange | None]:
    """For each side of a rated duel, its TrueSkill rating before and after; ``None`` for a side the duel
    did not rate. Where a competitor stands on the leaderboard is ``web.standing`` (the leaderboard's own
    rank, never a second order by mu - 3 sigma). At most 3 queries."""
    competitor_ids = [duel.revision_1.competitor_id, duel.revision_2.competitor_id]
    ratings = {
        r.competitor_id: r
        for r in Rating.objects.filter(environment_id=duel.environment_id, competitor_id__in=competitor_ids)
    }
    return [
        rating_changes(ratings[cid], [duel.pk]).get(duel.pk) if cid in ratings else None
        for cid in competitor_ids
    ]


@dataclass
class RevisionRecord:
    """What one revision did on the ladder: duels, match results, and the rating after its last duel."""

    duels: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    errors: int = 0
    mu: float | None = None
    sigma: float | None = None

    @property
    def skill(self) -> float | None:
        """mu - 3 sigma after the revision's last rated duel."""
        return None if self.mu is None or self.sigma is None else self.mu - 3 * self.sigma


def revision_records(rating: Rating | None, revision_ids: list[int]) -> dict[int, RevisionRecord]:
    """Per revision: finished duels and their match results, and the rating its last rated duel left
    (3 queries whatever the number of revisions)."""
    records: dict[int, RevisionRecord] = defaultdict(RevisionRecord)
    if not revision_ids:
        return records
    finished = Duel.objects.filter(state=Duel.State.FINISHED)
    sides = (
        ("revision_1", "player_1_wins", "player_2_wins", "player_1_errors"),
        ("revision_2", "player_2_wins", "player_1_wins", "player_2_errors"),
    )
    for rev_field, won, lost, erred in sides:
        rows = (
            finished.filter(**{f"{rev_field}_id__in": revision_ids})
            .exclude(revision_1__competitor=F("revision_2__competitor"))  # self-play challenges
            .values(rev=F(f"{rev_field}_id"))
            .annotate(n=Count("pk"), w=Sum(won), d=Sum("draws"), lo=Sum(lost), e=Sum(erred))
        )
        for row in rows:
            rec = records[row["rev"]]
            rec.duels += row["n"]
            rec.wins += row["w"] or 0
            rec.draws += row["d"] or 0
            rec.losses += row["lo"] or 0
            rec.errors += row["e"] or 0
    if rating is not None:
        played = RatingHistory.objects.filter(rating=rating).filter(
            Q(duel__revision_1_id=OuterRef("pk")) | Q(duel__revision_2_id=OuterRef("pk"))
        )
        last = played.order_by("-created_at", "-pk")
        rated = (
            Revision.objects.filter(pk__in=revision_ids)
            .annotate(mu=Subquery(last.values("mu")[:1]), sigma=Subquery(last.values("sigma")[:1]))
            .values_list("pk", "mu", "sigma")
        )
        for pk, mu, sigma in rated:
            if mu is not None:
                records[pk].mu, records[pk].sigma = mu, sigma
    return records


@dataclass(frozen=True)
class StoredDataSummary:
    """A competitor's data folder as its owner sees it (never the content: see the download)."""

    size_bytes: int
    cap_bytes: int
    files: int
    generation: int
    updated_at: datetime | None
    updated_by_duel_id: int | None
    last_problem: str
    last_problem_at: datetime | None

    @property
    def enabled(self) -> bool:
        """Whether agents of this game get a data folder (``AGENT_DATA_MB`` or the game's ``data_mb``)."""
        return self.cap_bytes > 0

    @property
    def problem(self) -> str:
        """``last_problem`` when it matters to the owner: always while the folder holds files; on an empty
        folder only when it is about files the agent left (refused, over the cap), not that the folder
        could not be read back (the agent had stopped, or our side failed), which only matters to an
        agent that keeps data. A newcomer who never used the folder reads nothing about it."""
        if not self.last_problem or self.files or self.size_bytes:
            return self.last_problem
        if any(phrase in self.last_problem for phrase in _NOT_READ_BACK):
            return ""
        return self.last_problem


#: The referee's sentences (``run_duel.agent_data.save_from``, ``run_duel.referee``) for a folder it did not
#: read back: nothing the agent left is known to be lost.
_NOT_READ_BACK = ("was not running at the end of the duel", "could not be read")


def stored_data(comp: Competitor) -> StoredDataSummary:
    """The data folder's size, cap, files, last change and last problem: one query (the archive itself
    is not read). For owners and staff only: callers check ``can_see_private`` first."""
    from core.actions.agent_data import MB, data_cap_mb

    row = (
        StoredAgentData.objects.filter(competitor_id=comp.pk)
        .values(
            "size_bytes",
            "files",
            "generation",
            "updated_at",
            "updated_by_duel_id",
            "last_problem",
            "last_problem_at",
        )
        .first()
    ) or {
        "size_bytes": 0,
        "files": 0,
        "generation": 0,
        "updated_at": None,
        "updated_by_duel_id": None,
        "last_problem": "",
        "last_problem_at": None,
    }
    return StoredDataSummary(cap_bytes=data_cap_mb(comp.environment.slug) * MB, **row)
