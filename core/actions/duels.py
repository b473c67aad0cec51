"""State changes of duels: schedule, claim, record the result, infrastructure failure, re-queue."""

from __future__ import annotations

from typing import Any

import orjson
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from core.actions.competitors import pause_erring_players
from core.actions.errors import ActionError
from core.actions.jobs import LOCKED_AT, Claim, claim_job, fail_job, lock_claimed, requeue_failed_job
from core.actions.pair_records import count_duel_result
from core.match_moves import pack
from core.match_states import compact
from core.models import Duel, Environment, Match, Revision, Tournament
from core.queue import enqueue_on_commit
from core.rating_outbox import trigger_on_commit

#: A result is accepted while the claim's generation is current: running, re-queued by the reaper while
#: its worker was cut off, or even FAILED that way (nobody else played it since; its result is real).
ACCEPTS_RESULT = (Duel.State.QUEUED, Duel.State.RUNNING, Duel.State.FAILED)
_RESULTS = set(Duel.Result.values)
_MATCH_RESULTS = set(Match.Result.values)


def schedule_duel(
    revision_1: Revision | int,
    revision_2: Revision | int,
    *,
    kind: str = Duel.Kind.LADDER,
    tournament: Tournament | None = None,
    priority: int = 0,
    num_matches: int | None = None,
) -> Duel:
    """Queue a duel between two ELIGIBLE revisions of the same environment (run after commit)."""
    ids = [r.pk if isinstance(r, Revision) else r for r in (revision_1, revision_2)]
    revisions = {
        r.pk: r
        for r in Revision.objects.filter(pk__in=ids)
        .select_related("competitor")
        .only("pk", "state", "agent_ref", "competitor__environment_id")
    }
    if len(revisions) != len(set(ids)):
        raise ActionError(f"unknown revision among {ids}")
    r1, r2 = revisions[ids[0]], revisions[ids[1]]
    for r in (r1, r2):
        if r.state != Revision.State.ELIGIBLE or not r.agent_ref:
            raise ActionError(f"revision {r.pk} is {r.state}, not ELIGIBLE")
    if r1.competitor.environment_id != r2.competitor.environment_id:
        raise ActionError("the two revisions play different environments")
    with transaction.atomic():
        duel = Duel.objects.create(
            environment_id=r1.competitor.environment_id,
            revision_1=r1,
            revision_2=r2,
            kind=kind,
            tournament=tournament,
            priority=priority,
            num_matches=num_matches,
            enqueued_at=timezone.now(),
        )
        enqueue_on_commit(Duel.task_name, duel.pk)
    return duel


def claim_duel(duel_id: int, worker: str | None = None, lease_s: float | None = None) -> Duel | None:
    """Claim duel ``duel_id`` (``None`` if someone else has it, it is finished, or out of attempts), with
    its environment and revisions loaded."""
    return claim_job(Duel, duel_id, worker, lease_s, related=("environment", "revision_1", "revision_2"))


#: Game rules per environment id (an environment's slug never changes), for :func:`_match_row`.
_GAMES: dict[int, Any] = {}


def _game_of(duel: Duel) -> Any:
    game = _GAMES.get(duel.environment_id)
    if game is None:
        from environments import get_game

        slug = Environment.objects.values_list("slug", flat=True).get(pk=duel.environment_id)
        game = _GAMES[duel.environment_id] = get_game(slug)
    return game


def _match_row(duel: Duel, index: int, m: dict[str, Any]) -> Match:
    """A Match row of ``m`` (a match of the duel JSON), its states stored compact (``core.match_states``:
    the rules replay them from the actions when read), its actions and move times packed
    (``core.match_moves``)."""
    if m.get("result") not in _MATCH_RESULTS:
        raise ValueError(f"match {index}: bad result {m.get('result')!r}")
    actions = m.get("actions") or []
    return Match(
        duel=duel,
        index=index,
        result=m["result"],
        error_kind=m.get("error_kind") or "",
        error_msg=m.get("error_msg") or "",
        first_player=m.get("first_player") or Match.FirstPlayer.PLAYER_1,
        player_1_score=float(m.get("player_1_score") or 0.0),
        player_2_score=float(m.get("player_2_score") or 0.0),
        states=compact(_game_of(duel), m.get("states") or [], actions),
        packed_moves=pack(actions, m.get("move_times")),
    )


#: The Duel columns :func:`record_duel_result` writes.
_RESULT_FIELDS = [
    *("state", "result", "error_msg", "num_matches", "player_1_wins", "player_2_wins", "draws"),
    *("player_1_errors", "player_2_errors", "other_errors", "player_1_score", "player_2_score"),
    *("stop_rule", "planned_matches", "stopped_early", "player_1_log", "player_2_log"),
    *("finished_at", "lease_expires_at"),
]
_MATCH_FIELDS = ["result", "error_kind", "error_msg", "first_player", "player_1_score", "player_2_score"]


def record_matches_so_far(claim: Claim, first_index: int, matches: list[dict[str, Any]]) -> bool:
    """Store the matches a running duel has played so far (from ``first_index``), so its page shows them
    live; ``False`` (nothing written) if ``claim`` no longer holds the duel. The final result replaces
    them (``record_duel_result``), and a re-queued attempt's rows are removed with its release."""
    with transaction.atomic():
        duel = lock_claimed(Duel, claim, states=(Duel.State.RUNNING,))
        if duel is None:
            return False
        rows = [_match_row(duel, first_index + i, m) for i, m in enumerate(matches)]
        Match.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["duel", "index"],
            update_fields=[*_MATCH_FIELDS, "states", "packed_moves"],
        )
    return True


def record_duel_result(claim: Claim, duel_json: dict[str, Any]) -> bool:
    """Store the duel JSON of the duel ``claim`` holds and trigger its rating (after commit).

    Fenced and idempotent: ``False`` (nothing written) if the duel already has a result or another worker
    claimed it since (a newer generation); Match rows are unique per (duel, index)."""
    if duel_json.get("result") not in _RESULTS:
        raise ValueError(f"duel {claim.job_id}: bad result {duel_json.get('result')!r}")
    log_cap = settings.PLAYER_LOG_MAX_CHARS
    with transaction.atomic():
        duel = lock_claimed(Duel, claim, states=ACCEPTS_RESULT, with_time=True)
        if duel is None:
            return False
        was_failed = duel.state == Duel.State.FAILED
        now = getattr(duel, LOCKED_AT)
        matches = [_match_row(duel, i, m) for i, m in enumerate(duel_json.get("matches") or [])]
        duel.state = Duel.State.FINISHED
        duel.result = duel_json["result"]
        duel.error_msg = duel_json.get("error_msg") or ""
        duel.num_matches = int(duel_json.get("num_matches") or len(matches))
        for field in (
            "player_1_wins",
            "player_2_wins",
            "draws",
            "player_1_errors",
            "player_2_errors",
            "other_errors",
        ):
            setattr(duel, field, int(duel_json.get(field) or 0))
        duel.player_1_score = duel_json.get("player_1_score")
        duel.player_2_score = duel_json.get("player_2_score")
        duel.stop_rule = duel_json.get("stop_rule")  # run_duel.stopping: set only for a duel that could stop
        duel.planned_matches = duel_json.get("planned_matches")
        duel.stopped_early = duel_json.get("stopped_early")
        duel.player_1_log = (duel_json.get("player_1_log") or "")[-log_cap:]
        duel.player_2_log = (duel_json.get("player_2_log") or "")[-log_cap:]
        duel.finished_at = now
        duel.lease_expires_at = None
        duel.save(update_fields=_RESULT_FIELDS)  # the columns a result sets, not the other 20
        Match.objects.filter(duel=duel).delete()  # the rows shown while it ran, if any
        _insert_matches(matches)
        count_duel_result(duel)  # per-pair counts for the tie fit and head to head
        if duel.tournament_id is not None:
            counters: dict[str, Any] = {"duels_finished": F("duels_finished") + 1}
            if was_failed:
                counters["duels_failed"] = F("duels_failed") - 1
            Tournament.objects.filter(pk=duel.tournament_id).update(**counters)
        pause_erring_players(duel)
        trigger_on_commit(duel.environment_id)
    return True


#: Match columns written by :func:`_insert_matches` (every one but the id), those holding JSON, and the
#: packed moves (bytes, handed to the COPY as they are).
_COPY_FIELDS = [f for f in Match._meta.concrete_fields if not f.primary_key]
_COPY_COLUMNS = ", ".join(f'"{f.column}"' for f in _COPY_FIELDS)
_COPY_SQL = f'COPY "{Match._meta.db_table}" ({_COPY_COLUMNS}) FROM STDIN'
_JSON_FIELDS = {f.attname for f in _COPY_FIELDS if f.get_internal_type() == "JSONField"}
_BINARY_FIELDS = {f.attname for f in _COPY_FIELDS if f.get_internal_type() == "BinaryField"}


def _insert_matches(rows: list[Match]) -> None:
    """Insert new Match rows (ids are not read back): one ``COPY`` on PostgreSQL, JSON encoded by orjson,
    the packed moves as bytes (``bulk_create``'s ``INSERT ... UNNEST`` quotes every array element in
    Python); ``bulk_create`` elsewhere (SQLite)."""
    if connection.vendor != "postgresql":
        Match.objects.bulk_create(rows)
        return
    connection.ensure_connection()
    with connection.connection.cursor() as cursor, cursor.copy(_COPY_SQL) as copy:
        for row in rows:
            copy.write_row(
                [
                    orjson.dumps(getattr(row, f.attname)).decode()
                    if f.attname in _JSON_FIELDS
                    else bytes(getattr(row, f.attname))
                    if f.attname in _BINARY_FIELDS
                    else f.get_db_prep_save(getattr(row, f.attname), connection)
                    for f in _COPY_FIELDS
                ]
            )


def _drop_partial_matches(duel: Duel) -> None:
    """A released attempt's live rows go: the next attempt plays from scratch."""
    Match.objects.filter(duel=duel).delete()


def _duel_failed(duel: Duel) -> None:
    if duel.tournament_id is not None:
        Tournament.objects.filter(pk=duel.tournament_id).update(duels_failed=F("duels_failed") + 1)


def fail_duel(
    duel_id: int,
    reason: str,
    *,
    claim: Claim | None,
    retry: bool = True,
    counted: bool = True,
    delay_s: float | None = None,
) -> bool:
    """An infrastructure failure (never charged to the players) seen by the worker holding ``claim``, or by
    the reaper (``claim=None``, expired lease): re-queue with backoff while attempts remain, else FAILED.
    Returns whether anything changed."""
    return fail_job(
        Duel,
        duel_id,
        reason,
        claim=claim,
        retry=retry,
        counted=counted,
        delay_s=delay_s,
        on_released=_drop_partial_matches,
        on_failed=_duel_failed,
    )


def on_duel_requeued(duel: Duel) -> None:
    """A FAILED duel queued again (operator or automatic retry): it no longer counts as failed."""
    if duel.tournament_id is not None:
        Tournament.objects.filter(pk=duel.tournament_id, duels_failed__gt=0).update(
            duels_failed=F("duels_failed") - 1
        )


def requeue_duel(duel_id: int) -> bool:
    """Operator action: run a FAILED duel again with fresh attempts. ``False`` if it is not FAILED."""
    with transaction.atomic():
        duel = requeue_failed_job(Duel, duel_id, automatic=False)
        if duel is not None:
            on_duel_requeued(duel)
    return duel is not None
