"""State changes owned by the tournament manager: ratings, ladder scheduling, tournament editions.

Every function owns its transaction. Ratings of an environment change only under a row lock on its
``Environment`` (``select_for_update``), so concurrent rating tasks serialise and no update is lost.

Order: pending duels are applied by (finished time, id). Each batch stamps its duels' ``rated_at`` with
a strictly increasing time per environment, so :func:`recompute_ratings` can replay every stored result
in exactly the order it was rated - (rated_at, finished_at, id) - and reproduce the same numbers.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import Field, Max
from django.utils import timezone

from core.actions import schedule_duel
from core.actions.notifications import notify_tournament_finished
from core.models import (
    Competitor,
    Duel,
    Environment,
    Match,
    Rating,
    RatingHistory,
    Revision,
    Tournament,
    TournamentParticipant,
)
from tournament_manager import tie_fit
from tournament_manager.editions import DuelOutcome, round_robin_pairs, standings
from tournament_manager.ids import Id
from tournament_manager.ladder import DuelRecord, RatingState, apply_duel
from tournament_manager.ladder_pool import (  # noqa: F401 - re-exported: callers import them from here
    DEFAULT_DUEL_COST,
    DUEL_LENGTH_FACTOR,
    active_environments,
    duel_cost,
    get_environment_rater,
    ladder_candidates,
    ladder_in_flight,
    ladder_policy,
    ladder_queue_target,
    load_states,
    state_of,
)
from tournament_manager.matchmaking import plan_duels
from tournament_manager.measured_cost import measured_duel_cost
from tournament_manager.rating import Rater, Skill

log = logging.getLogger(__name__)

#: Duel kinds whose results move ratings (challenges are friendly games).
RATED_KINDS = (Duel.Kind.LADDER, Duel.Kind.TOURNAMENT)
_ACTIVE_DUEL = (Duel.State.QUEUED, Duel.State.RUNNING)
_DUEL_OUTCOME = {
    Duel.Result.PLAYER_1_WIN: 1.0,
    Duel.Result.PLAYER_2_WIN: 0.0,
    Duel.Result.DRAW: 0.5,
    Duel.Result.ERROR: None,
}


# --- ratings -------------------------------------------------------------------------------------------


#: Duel kinds the ratings see at all: rated kinds move them, challenges only count as played (a season's
#: FINALS duels are the season's business: marked rated, never applied).
_APPLIED_KINDS = (*RATED_KINDS, Duel.Kind.CHALLENGE)


def _records(duels: list[dict[str, Any]]) -> list[DuelRecord]:
    """DuelRecords (with their match results in play order) for the duel value dicts of kinds the ratings
    see (``_APPLIED_KINDS``); one query."""
    duels = [d for d in duels if d["kind"] in _APPLIED_KINDS]
    results: dict[int, list[str]] = {d["pk"]: [] for d in duels}
    rows = Match.objects.filter(duel_id__in=list(results)).order_by("duel_id", "index")
    for duel_id, result in rows.values_list("duel_id", "result"):
        results[duel_id].append(result)
    return [
        DuelRecord(
            duel_id=d["pk"],
            competitor_1=d["revision_1__competitor_id"],
            revision_1=d["revision_1_id"],
            competitor_2=d["revision_2__competitor_id"],
            revision_2=d["revision_2_id"],
            finished_at=d["finished_at"],
            match_results=tuple(results[d["pk"]]) if d["kind"] in RATED_KINDS else (),
        )
        for d in duels
    ]


_DUEL_FIELDS: tuple[str, ...] = ("pk", "kind", "finished_at", "revision_1_id", "revision_2_id")
_DUEL_FIELDS += ("revision_1__competitor_id", "revision_2__competitor_id")


def _copy_into(row: Rating, state: RatingState) -> None:
    row.set_skill(state.skill.mu, state.skill.sigma)
    for f in ("matches", "wins", "draws", "losses", "errors", "duels", "last_played_at"):
        setattr(row, f, getattr(state, f))


_RATING_FIELDS: tuple[str, ...] = ("mu", "sigma", "skill", "matches", "wins", "draws", "losses", "errors")
_RATING_FIELDS += ("duels", "last_played_at", "updated_at")


def _save_ratings(rows: list[Rating]) -> None:
    """Write the rating fields of ``rows`` in one statement per 1,000 rows.

    On PostgreSQL an ``UPDATE ... FROM UNNEST(arrays)``: Django's ``bulk_update`` builds a ``CASE`` per
    field and row, which costs milliseconds of Python per competitor in a batch. Elsewhere ``bulk_update``.
    """
    if connection.vendor != "postgresql":
        Rating.objects.bulk_update(rows, list(_RATING_FIELDS), batch_size=500)
        return
    meta = Rating._meta
    fields = [meta.get_field(f) for f in _RATING_FIELDS]
    assert all(isinstance(f, Field) for f in fields), "the rating fields are columns"
    columns = [f.column for f in fields if isinstance(f, Field)]
    types = [str(f.db_type(connection)).split("(")[0] for f in fields if isinstance(f, Field)]
    pk_type = meta.pk.rel_db_type(connection)  # type: ignore[attr-defined]  # Field.rel_db_type: not in the stubs
    assignments = ", ".join(f'"{c}" = v."{c}"' for c in columns)
    arrays = ", ".join(f"%s::{t}[]" for t in [pk_type, *types])
    names = ", ".join(f'"{c}"' for c in ["id", *columns])
    # Identifiers come from the model's metadata; every value is a bound parameter.
    sql = (
        f'UPDATE "{meta.db_table}" AS r SET {assignments} '  # noqa: S608
        f"FROM UNNEST({arrays}) AS v({names}) WHERE r.id = v.id"
    )
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 1000):
            chunk = rows[start : start + 1000]
            params = [[r.pk for r in chunk]] + [[getattr(r, f) for r in chunk] for f in _RATING_FIELDS]
            cursor.execute(sql, params)


def _apply_and_store(
    environment_id: int,
    records: list[DuelRecord],
    states: dict,
    rater: Rater,
    stamp: datetime,
    rows: dict[Id, Rating] | None = None,
) -> None:
    """Apply ``records`` in order on ``states``; write Ratings (``updated_at``: the round's ``stamp``) and
    one RatingHistory per (rating, duel). ``rows``: the competitors' Rating rows when the caller already
    loaded them (else one query)."""
    snapshots: list[tuple[Id, Id, Skill]] = []
    for record in records:
        if apply_duel(states, record, rater):
            for c in (record.competitor_1, record.competitor_2):
                snapshots.append((c, record.duel_id, states[c].skill))
    if rows is None:
        rows = {
            r.competitor_id: r
            for r in Rating.objects.filter(environment_id=environment_id, competitor_id__in=list(states))
        }
    missing = [Rating(environment_id=environment_id, competitor_id=c) for c in states if c not in rows]
    for row in Rating.objects.bulk_create(missing):
        rows[row.competitor_id] = row
    for c, state in states.items():
        _copy_into(rows[c], state)
        rows[c].updated_at = stamp
    _save_ratings([rows[c] for c in states])
    RatingHistory.objects.bulk_create(
        [RatingHistory(rating=rows[c], duel_id=d, mu=s.mu, sigma=s.sigma) for c, d, s in snapshots],
        batch_size=1000,
    )


def _next_stamp(environment_id: int) -> datetime:
    """A ``rated_at`` later than every earlier one of this environment, whatever the clocks say.

    Every round writes its stamp into the ``updated_at`` of the ratings it changed, and nothing lowers an
    ``updated_at`` (the tie fit's store only raises them), so the environment's latest ``updated_at``
    bounds every stamp given so far: one look at its Rating rows (one per competitor) instead of a scan of
    every rated duel, which grows with the history (57 ms a round at 100k rated duels, measured).
    """
    last = Rating.objects.filter(environment_id=environment_id).aggregate(m=Max("updated_at"))["m"]
    now = timezone.now()
    return now if last is None or now > last else last + timedelta(microseconds=1)


def rate_pending_duels(environment_id: int, *, limit: int | None = None) -> int:
    """Apply the FINISHED, unrated duels of the environment to its ratings (the ``limit`` oldest when
    given, else all); returns how many were rated.

    Runs under the environment's row lock; duels are applied by (finished_at, id) and marked rated in the
    same transaction, so running it twice, or concurrently, rates each duel exactly once.
    """
    rater = get_environment_rater()
    with transaction.atomic():
        Environment.objects.select_for_update(no_key=True).only("pk").get(pk=environment_id)
        pending = Duel.objects.filter(environment_id=environment_id, state=Duel.State.FINISHED, rated=False)
        duels = list(pending.order_by("finished_at", "pk").values(*_DUEL_FIELDS, "tournament_id")[:limit])
        if not duels:
            return 0
        records = _records(duels)
        competitors = {c for r in records for c in (r.competitor_1, r.competitor_2)}
        rows = load_states(environment_id, competitors)
        states = {c: state_of(row) for c, row in rows.items()}
        stamp = _next_stamp(environment_id)
        _apply_and_store(environment_id, records, states, rater, stamp, rows)
        Duel.objects.filter(pk__in=[d["pk"] for d in duels]).update(rated=True, rated_at=stamp)
        tournaments = {d["tournament_id"] for d in duels if d["tournament_id"] is not None}
    for tournament_id in sorted(tournaments):
        update_tournament_progress(tournament_id)
    log.info("rated %d duel(s) of environment %s", len(duels), environment_id)
    return len(duels)


def recompute_ratings(environment_id: int) -> int:
    """Rebuild every rating of the environment from the stored results; returns the duels replayed.

    Replays rated duels in the order they were rated, then any pending ones (which it marks rated),
    so the result equals what incremental rating produced (or would produce).
    """
    rater = get_environment_rater()
    with transaction.atomic():
        Environment.objects.select_for_update(no_key=True).only("pk").get(pk=environment_id)
        finished = Duel.objects.filter(environment_id=environment_id, state=Duel.State.FINISHED)
        rated = list(
            finished.filter(rated=True).order_by("rated_at", "finished_at", "pk").values(*_DUEL_FIELDS)
        )
        pending = list(finished.filter(rated=False).order_by("finished_at", "pk").values(*_DUEL_FIELDS))
        RatingHistory.objects.filter(rating__environment_id=environment_id).delete()
        initial = rater.initial()
        Rating.objects.filter(environment_id=environment_id).update(
            mu=initial.mu,
            sigma=initial.sigma,
            skill=initial.conservative,
            matches=0,
            wins=0,
            draws=0,
            losses=0,
            errors=0,
            duels=0,
            last_played_at=None,
        )
        states: dict[Id, RatingState] = {}
        stamp = _next_stamp(environment_id)
        _apply_and_store(environment_id, _records(rated + pending), states, rater, stamp)
        if pending:
            Duel.objects.filter(pk__in=[d["pk"] for d in pending]).update(rated=True, rated_at=stamp)
    tie_fit.request_refresh(environment_id)
    return len(rated) + len(pending)


# --- ladder matchmaking --------------------------------------------------------------------------------

#: First key of the advisory lock that serialises the matchmaking rounds of one environment.
_MATCHMAKE_LOCK = 0x544D4D4B  # "TMMK"


def _lock_matchmaking(environment_id: int) -> None:
    """Serialise matchmaking rounds of the environment until the transaction ends: a transaction-level
    advisory lock on PostgreSQL (the rating rounds' row lock on the Environment is never taken, so a round
    never waits for them nor they for it); the Environment row elsewhere (SQLite serialises writers)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_MATCHMAKE_LOCK, environment_id])
    else:
        Environment.objects.select_for_update(no_key=True).only("pk").get(pk=environment_id)


def matchmake(
    environment_id: int, rng: random.Random | None = None, batch_size: int | None = None
) -> list[Duel]:
    """Schedule a batch of disjoint ladder duels so the environment has its target number in flight.

    Rounds of one environment are serialised (:func:`_lock_matchmaking`), so two rounds never
    double-book a competitor; they read the ratings as committed, without the rating rounds' lock. The
    round plans over a bounded pool (:mod:`tournament_manager.ladder_pool`): its cost follows the duels
    it plans, not the league's size or history.

    A ladder already at its target (the common case after a rating round: duels finished, others
    queued) is seen without the transaction and the lock: the count and the target are read first, and
    read again under the lock only when there is room.
    """
    if batch_size is None and ladder_queue_target() <= ladder_in_flight(environment_id):
        return []  # nothing to plan; a round that finds room re-reads both under the lock
    rng = rng or random.Random()
    rater = get_environment_rater()
    created: list[Duel] = []
    with transaction.atomic():
        _lock_matchmaking(environment_id)
        env = Environment.objects.only("pk", "is_active", "matches_per_duel").get(pk=environment_id)
        if not env.is_active:
            return []
        if batch_size is None:
            batch_size = max(0, ladder_queue_target() - ladder_in_flight(environment_id))
        if batch_size == 0:
            return []
        # Duel lengths priced by what this game's duels cost the fleet lately (settings until enough ran).
        policy = ladder_policy(env.matches_per_duel, measured_duel_cost(environment_id, duel_cost()))
        fit = tie_fit.stored_fit(environment_id)  # settled pairs: the Bradley-Terry fit's verdicts
        to_play: Collection[tuple[int, int]]
        settled, to_play = (fit.needs_no_duel, fit.needs_play) if fit is not None else (None, ())
        cands = ladder_candidates(environment_id, rater, policy, batch=batch_size, to_play=to_play, rng=rng)
        revision_of = {c.id: rev for c, rev in cands}
        to_play = [(a, b) for a, b in to_play if a in revision_of and b in revision_of]  # the pool's only
        now = timezone.now()
        planned = plan_duels([c for c, _ in cands], batch_size, rater, rng, now, policy, settled, to_play)
        for duel in planned:
            first, second = (duel.a, duel.b) if rng.random() < 0.5 else (duel.b, duel.a)
            created.append(
                schedule_duel(
                    revision_of[first], revision_of[second], kind=Duel.Kind.LADDER, num_matches=duel.matches
                )
            )
    return created


# --- tournament editions -------------------------------------------------------------------------------


def eligible_revisions(environment_id: int) -> list[int]:
    """Current ELIGIBLE revisions of the environment's active competitors, sorted by id."""
    return sorted(
        Competitor.objects.filter(
            environment_id=environment_id,
            status=Competitor.Status.ACTIVE,
            current_revision__state=Revision.State.ELIGIBLE,
        ).values_list("current_revision_id", flat=True)
    )


def start_tournament(environment_id: int, revision_ids: list[int] | None = None) -> Tournament | None:
    """Start the next edition: a round robin over ``revision_ids`` (default: :func:`eligible_revisions`).

    Returns ``None`` (and creates nothing) when fewer than two revisions would take part.
    """
    with transaction.atomic():
        Environment.objects.select_for_update(no_key=True).only("pk").get(pk=environment_id)
        revisions = sorted(revision_ids if revision_ids is not None else eligible_revisions(environment_id))
        if len(revisions) < 2:
            return None
        last = Tournament.objects.filter(environment_id=environment_id).aggregate(m=Max("edition"))["m"] or 0
        pairs = round_robin_pairs(revisions)
        tournament = Tournament.objects.create(
            environment_id=environment_id,
            edition=last + 1,
            state=Tournament.State.RUNNING,
            duels_total=len(pairs),
            started_at=timezone.now(),
        )
        TournamentParticipant.objects.bulk_create(
            [TournamentParticipant(tournament=tournament, revision_id=r) for r in revisions]
        )
        for a, b in pairs:
            schedule_duel(a, b, kind=Duel.Kind.TOURNAMENT, tournament=tournament)
    log.info("started tournament %s edition %d (%d duels)", environment_id, tournament.edition, len(pairs))
    return tournament


def update_tournament_progress(tournament_id: int) -> Tournament:
    """Recompute the edition's standings from its finished duels; FINISHED once no duel is left to run."""
    with transaction.atomic():
        tournament = Tournament.objects.select_for_update().get(pk=tournament_id)
        duels = list(
            Duel.objects.filter(tournament_id=tournament_id).values(
                "state", "result", "revision_1_id", "revision_2_id", "player_1_score", "player_2_score"
            )
        )
        participants = {p.revision_id: p for p in tournament.participants.all()}
        outcomes = [
            DuelOutcome(
                d["revision_1_id"],
                d["revision_2_id"],
                _DUEL_OUTCOME.get(d["result"]),
                d["player_1_score"] or 0.0,
                d["player_2_score"] or 0.0,
            )
            for d in duels
            if d["state"] == Duel.State.FINISHED
        ]
        for line in standings(list(participants), outcomes):
            p = participants[line.id]
            p.points, p.wins, p.draws, p.losses = line.points, line.wins, line.draws, line.losses
            p.errors, p.score, p.rank = line.errors, line.score, line.rank
        TournamentParticipant.objects.bulk_update(
            list(participants.values()), ["points", "wins", "draws", "losses", "errors", "score", "rank"]
        )
        tournament.duels_finished = sum(d["state"] == Duel.State.FINISHED for d in duels)
        tournament.duels_failed = sum(d["state"] == Duel.State.FAILED for d in duels)
        fields = ["duels_finished", "duels_failed"]
        done = all(d["state"] not in _ACTIVE_DUEL for d in duels)
        if tournament.state == Tournament.State.RUNNING and done:
            tournament.state = Tournament.State.FINISHED
            tournament.finished_at = timezone.now()
            fields += ["state", "finished_at"]
        tournament.save(update_fields=fields)
        if "state" in fields:
            notify_tournament_finished(tournament)
    return tournament


def check_editions(environment_id: int) -> Tournament | None:
    """Start a new edition when the set of eligible revisions differs from the latest edition's (and no
    edition is running). Returns the new edition, if any."""
    with transaction.atomic():
        Environment.objects.select_for_update(no_key=True).only("pk").get(pk=environment_id)
        latest = Tournament.objects.filter(environment_id=environment_id).order_by("-edition").first()
        if latest is not None and latest.state in (Tournament.State.PENDING, Tournament.State.RUNNING):
            return None
        current = eligible_revisions(environment_id)
        if latest is not None:
            previous = sorted(latest.participants.values_list("revision_id", flat=True))
            if previous == current:
                return None
        if len(current) < 2:
            return None
        return start_tournament(environment_id, current)


def running_tournaments() -> list[int]:
    """Ids of editions still RUNNING."""
    return list(Tournament.objects.filter(state=Tournament.State.RUNNING).values_list("pk", flat=True))
