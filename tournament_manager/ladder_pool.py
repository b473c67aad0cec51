"""What a matchmaking round reads: a bounded pool of candidates, their daily budgets and duels in flight.

Read only (the round's writes are in :mod:`tournament_manager.actions`). A round's cost follows the
candidates it plans with, never the league's size or its history:

- **Small leagues** (at most :data:`FULL_LEAGUE` playable competitors): every competitor is a candidate,
  exactly as before.
- **Large leagues**: the union of four bounded, ordered selections, each ``LIMIT``-ed in SQL:
  competitors in **placement** (no rating, fewer than ``placement_matches`` matches, or a current revision
  newer than their last duel), most uncertain first; the longest **idle** (never played first); the
  members of the pairs the stored fit **needs played** (``to_play``); and a **window** of consecutive
  competitors in the order by ``mu`` at a random place (rounds run every time duels finish, so the windows
  sweep the ladder). Competitors with :data:`MAX_IN_FLIGHT`-many duels in flight are left out in SQL.
  ``plan_duels`` then pairs inside that pool (placement and idle first, the window's neighbours by doubt).
- **Daily budgets and duels in flight** are counted for the pool only: duels in flight from the queued and
  running duels (partial indexes on ``state``: bounded by the queue, not the history), ladder duels of the
  last 24 hours per competitor from the partial indexes ``core_duel_ladder_p1_day`` /
  ``core_duel_ladder_p2_day`` on (revision, finished_at) of ladder duels: rows read are the pool's duels
  of the day (a competitor plays at most ``TM_DAILY_DUELS`` a day outside placement duty), never the day's
  duels of the whole ladder (8 million rows at 94 results a second).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Exists, F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from core.models import Competitor, Duel, Environment, Rating, RatingHistory, Revision
from tournament_manager.duel_plan import DuelCost, even_lengths
from tournament_manager.ids import Id
from tournament_manager.ladder import RatingState
from tournament_manager.matchmaking import Candidate, MatchmakingPolicy
from tournament_manager.rating import Rater, Skill, get_rater

#: Leagues with at most this many playable competitors are planned over all of them.
FULL_LEAGUE = 256
#: Size of the window of neighbours by ``mu`` in a large league (at least 4 x the batch).
WINDOW = 32
#: The longest ladder duel, as a multiple of the game's ``matches_per_duel`` (``TM_MAX_DUEL_MATCHES`` 0).
DUEL_LENGTH_FACTOR = 4
#: The Docker sandbox's measured cost (benchmarks/fixtures/duel_cost.json) when settings give none.
DEFAULT_DUEL_COST = DuelCost(fixed_s=0.5, per_match_s=0.01)
ACTIVE_DUEL = (Duel.State.QUEUED, Duel.State.RUNNING)

_PLAYABLE = Q(status=Competitor.Status.ACTIVE, current_revision__state=Revision.State.ELIGIBLE)


def get_environment_rater() -> Rater:
    """The rater from settings ``TM_RATER`` (default ``"trueskill"``) and ``TM_RATER_PARAMS`` (dict)."""
    return get_rater(getattr(settings, "TM_RATER", "trueskill"), **getattr(settings, "TM_RATER_PARAMS", {}))


def load_states(environment_id: int, competitor_ids: Iterable[Id]) -> dict[Id, Rating]:
    """Existing Rating rows of these competitors, annotated with the revision their rating last saw."""
    latest = RatingHistory.objects.filter(rating=OuterRef("pk"), duel__isnull=False).order_by("-id")
    rows = Rating.objects.filter(
        environment_id=environment_id, competitor_id__in=list(competitor_ids)
    ).annotate(
        last_competitor_1=Subquery(latest.values("duel__revision_1__competitor_id")[:1]),
        last_revision_1=Subquery(latest.values("duel__revision_1_id")[:1]),
        last_revision_2=Subquery(latest.values("duel__revision_2_id")[:1]),
    )
    return {r.competitor_id: r for r in rows}


def _candidate_states(
    environment_id: int, competitor_ids: list[int]
) -> dict[int, tuple[Skill, int, datetime | None, int | None]]:
    """(skill, matches, last played, revision its rating last saw) per rated competitor of the list: the
    values :func:`load_states` gives, without building Rating objects."""
    latest = RatingHistory.objects.filter(rating=OuterRef("pk"), duel__isnull=False).order_by("-id")
    rows = (
        Rating.objects.filter(environment_id=environment_id, competitor_id__in=competitor_ids)
        .annotate(
            c1=Subquery(latest.values("duel__revision_1__competitor_id")[:1]),
            r1=Subquery(latest.values("duel__revision_1_id")[:1]),
            r2=Subquery(latest.values("duel__revision_2_id")[:1]),
        )
        .values_list("competitor_id", "mu", "sigma", "matches", "last_played_at", "c1", "r1", "r2")
    )
    return {
        cid: (Skill(mu, sigma), matches, last, r1 if c1 == cid else r2)
        for cid, mu, sigma, matches, last, c1, r1, r2 in rows
    }


def state_of(row: Rating) -> RatingState:
    """The replay state of a Rating row loaded by :func:`load_states`."""
    # The annotations of load_states (the last rated duel's sides), not fields of the model.
    first, c1 = getattr(row, "last_revision_1"), getattr(row, "last_competitor_1")  # noqa: B009
    revision = first if c1 == row.competitor_id else getattr(row, "last_revision_2")  # noqa: B009
    return RatingState(
        skill=Skill(row.mu, row.sigma),
        matches=row.matches,
        wins=row.wins,
        draws=row.draws,
        losses=row.losses,
        errors=row.errors,
        duels=row.duels,
        last_played_at=row.last_played_at,
        revision=revision,
    )


# --- settings ------------------------------------------------------------------------------------------


def duel_cost() -> DuelCost:
    """The sandbox's cost model from settings ``TM_DUEL_FIXED_SECONDS`` and ``TM_DUEL_MATCH_SECONDS``."""
    return DuelCost(
        getattr(settings, "TM_DUEL_FIXED_SECONDS", DEFAULT_DUEL_COST.fixed_s),
        getattr(settings, "TM_DUEL_MATCH_SECONDS", DEFAULT_DUEL_COST.per_match_s),
    )


def ladder_policy(matches_per_duel: int | None = None, cost: DuelCost | None = None) -> MatchmakingPolicy:
    """The matchmaking policy from settings ``TM_PLACEMENT_MATCHES``, ``TM_RANDOM_SHARE``, ``TM_NEIGHBOURS``,
    ``TM_MAX_IN_FLIGHT``, ``TM_IDLE_AFTER_SECONDS``, ``TM_DAILY_DUELS`` and ``TM_DUEL_STOP_EARLY`` (defaults:
    :class:`MatchmakingPolicy`'s; settled pairs are the stored fit's). With the game's ``matches_per_duel``,
    duel lengths are chosen per pairing among the even numbers from ``TM_MIN_DUEL_MATCHES`` to
    ``TM_MAX_DUEL_MATCHES`` (0: ``DUEL_LENGTH_FACTOR`` x ``matches_per_duel``) with the cost model
    ``cost`` (default :func:`duel_cost`)."""
    default = MatchmakingPolicy()
    lengths: tuple[int, ...] = ()
    if matches_per_duel:
        high = getattr(settings, "TM_MAX_DUEL_MATCHES", 0) or DUEL_LENGTH_FACTOR * matches_per_duel
        lengths = even_lengths(getattr(settings, "TM_MIN_DUEL_MATCHES", 2), high)
    return MatchmakingPolicy(
        placement_matches=getattr(settings, "TM_PLACEMENT_MATCHES", default.placement_matches),
        random_share=getattr(settings, "TM_RANDOM_SHARE", default.random_share),
        neighbours=getattr(settings, "TM_NEIGHBOURS", default.neighbours),
        max_in_flight=getattr(settings, "TM_MAX_IN_FLIGHT", default.max_in_flight),
        idle_after=timedelta(
            seconds=getattr(settings, "TM_IDLE_AFTER_SECONDS", default.idle_after.total_seconds())
        ),
        cost=(cost or duel_cost()) if lengths else None,
        duel_lengths=lengths,
        daily_duels=getattr(settings, "TM_DAILY_DUELS", default.daily_duels),
        stop_rule=default.stop_rule if getattr(settings, "TM_DUEL_STOP_EARLY", True) else None,
    )


# --- capacity ------------------------------------------------------------------------------------------


def active_environments() -> list[int]:
    """Ids of active environments with at least two playable competitors (one index probe per game: the
    second playable competitor, not a count of all of them)."""
    second = Competitor.objects.filter(_PLAYABLE, environment_id=OuterRef("pk")).order_by().values("pk")[1:2]
    return list(
        Environment.objects.filter(is_active=True)
        .annotate(second=Subquery(second))
        .filter(second__isnull=False)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def ladder_queue_target() -> int:
    """How many ladder duels each environment keeps queued or running: ``TM_LADDER_QUEUE_TARGET`` when it
    is set, else the live capacity: ``TM_LADDER_SLOT_FACTOR`` x the job slots of the healthy workers
    (``core.jobs.health.live_slots``), shared equally by the active environments (rounded up, so every
    game keeps at least one duel in flight while any worker is up)."""
    fixed = getattr(settings, "TM_LADDER_QUEUE_TARGET", None)
    if fixed is not None:
        return int(fixed)
    from core.jobs.health import live_slots

    slots = live_slots()
    if slots <= 0:
        return 0
    games = max(1, len(active_environments()))
    return math.ceil(float(getattr(settings, "TM_LADDER_SLOT_FACTOR", 2.0)) * slots / games)


def ladder_in_flight(environment_id: int) -> int:
    """Ladder duels of the environment queued or running (read through the partial indexes on state)."""
    return Duel.objects.filter(
        environment_id=environment_id, kind=Duel.Kind.LADDER, state__in=ACTIVE_DUEL
    ).count()


# --- the pool ------------------------------------------------------------------------------------------


def _busy(environment_id: int) -> dict[int, int]:
    """Duels of any kind queued or running per competitor (bounded by the queue, not by the history)."""
    counts: dict[int, int] = {}
    active = Duel.objects.filter(environment_id=environment_id, state__in=ACTIVE_DUEL)
    for c1, c2 in active.values_list("revision_1__competitor_id", "revision_2__competitor_id"):
        counts[c1] = counts.get(c1, 0) + 1
        counts[c2] = counts.get(c2, 0) + 1
    return counts


#: Ladder duels finished since a time, per competitor of a list: one count per side, each read through
#: its partial index on (revision, finished_at) of ladder duels (the pool's duels of the day only).
_TODAY_SQL = " UNION ALL ".join(  # fixed identifiers, every value bound
    f"""SELECT r.competitor_id, COUNT(*) FROM core_revision r
        JOIN core_duel d ON d.{side}_id = r.id AND d.kind = 'LADDER' AND d.finished_at >= %s
        WHERE r.competitor_id = ANY(%s) GROUP BY r.competitor_id"""  # noqa: S608
    for side in ("revision_1", "revision_2")
)


def _ladder_today(ids: list[int], since: datetime) -> dict[int, int]:
    """Ladder duels finished since ``since`` per competitor of ``ids`` (module docstring)."""
    counts = dict.fromkeys(ids, 0)
    if not ids:
        return counts
    if connection.vendor != "postgresql":  # SQLite: the same count through the ORM
        recent = Duel.objects.filter(kind=Duel.Kind.LADDER, finished_at__gte=since).order_by()
        for side in ("revision_1__competitor_id", "revision_2__competitor_id"):
            for cid in recent.filter(**{f"{side}__in": ids}).values_list(side, flat=True):
                counts[cid] += 1
        return counts
    with connection.cursor() as cursor:
        cursor.execute(_TODAY_SQL, [since, ids, since, ids])
        for competitor_id, n in cursor.fetchall():
            counts[competitor_id] += n
    return counts


def _pool_ids(
    environment_id: int,
    policy: MatchmakingPolicy,
    batch: int,
    busy: dict[int, int],
    to_play: Iterable[tuple[Id, Id]],
    rng: random.Random,
    now: datetime,
) -> list[int] | None:
    """The ids of a large league's pool (module docstring); ``None`` for a small league (everyone)."""
    playable = Competitor.objects.filter(_PLAYABLE, environment_id=environment_id)
    if len(playable.values_list("pk", flat=True)[: FULL_LEAGUE + 1]) <= FULL_LEAGUE:
        return None
    full = [cid for cid, n in busy.items() if n >= policy.max_in_flight]
    free = playable.exclude(pk__in=full)
    ratings = Rating.objects.filter(environment_id=environment_id, competitor__in=free)
    limit = max(2 * batch, 8)
    ids: list[int] = []
    rated = Rating.objects.filter(environment_id=environment_id, competitor_id=OuterRef("pk"))
    ids += free.exclude(Exists(rated)).values_list("pk", flat=True)[:limit]
    # A current revision that became playable after the last duel: its rating has not seen it yet.
    revision = "competitor__current_revision__"
    newer = Q(last_played_at__lt=Coalesce(f"{revision}tested_at", f"{revision}created_at"))
    placing = Q(matches__lt=policy.placement_matches) | Q(last_played_at__isnull=True) | newer
    ids += ratings.filter(placing).order_by("-sigma").values_list("competitor_id", flat=True)[:limit]
    cutoff = now - policy.idle_after
    idle = ratings.filter(Q(last_played_at__lte=cutoff) | Q(last_played_at__isnull=True))
    ids += idle.order_by(F("last_played_at").asc(nulls_first=True)).values_list("competitor_id", flat=True)[
        :limit
    ]
    window = max(WINDOW, 4 * batch)
    pairs = list(to_play)  # a random share of the fit's pairs to play, not the same ones every round
    wanted = [c for pair in rng.sample(pairs, min(len(pairs), window // 2)) for c in pair]
    ids += free.filter(pk__in=wanted).values_list("pk", flat=True)
    n = ratings.count()
    start = rng.randrange(max(1, n - window + 1))
    by_mu = ratings.order_by("mu", "competitor_id").values_list("competitor_id", flat=True)
    ids += by_mu[start : start + window]
    return list(dict.fromkeys(ids))


def ladder_candidates(
    environment_id: int,
    rater: Rater | None = None,
    policy: MatchmakingPolicy | None = None,
    *,
    batch: int = 0,
    to_play: Iterable[tuple[Id, Id]] = (),
    rng: random.Random | None = None,
) -> list[tuple[Candidate, int]]:
    """The round's candidates as (Candidate, current revision id): every playable competitor of a small
    league, a bounded pool of a large one (module docstring); ``batch``: the duels the round plans.

    A competitor whose rating last saw an older revision is presented with its uncertainty reset and no
    matches, so its new revision goes through placement. ``duels_today`` counts ladder duels finished in
    the last 24 hours and those in flight (the daily budget counts both).
    """
    rater = rater or get_environment_rater()
    policy = policy or ladder_policy()
    rng = rng or random.Random()
    now = timezone.now()
    busy = _busy(environment_id)
    pool = _pool_ids(environment_id, policy, batch, busy, to_play, rng, now)
    competitors = Competitor.objects.filter(_PLAYABLE, environment_id=environment_id)
    if pool is not None:
        competitors = competitors.filter(pk__in=pool)
    rows: list[dict[str, Any]] = [
        dict(row) for row in competitors.values("pk", "current_revision_id", "current_revision__content_hash")
    ]
    ids = [c["pk"] for c in rows]
    ratings = _candidate_states(environment_id, ids)
    today = _ladder_today(ids, now - timedelta(days=1))
    out = []
    for c in rows:
        row = ratings.get(c["pk"])
        if row is None:
            skill, matches, last = rater.initial(), 0, None
        else:
            skill, matches, last, revision = row
            if revision is not None and revision != c["current_revision_id"]:
                skill, matches = rater.reset_uncertainty(skill), 0
        in_flight = busy.get(c["pk"], 0)
        cand = Candidate(
            c["pk"],
            skill,
            matches,
            last,
            in_flight,
            duels_today=today[c["pk"]] + in_flight,
            code=c["current_revision__content_hash"] or None,
        )
        out.append((cand, c["current_revision_id"]))
    return out
