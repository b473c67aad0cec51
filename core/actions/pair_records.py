"""Per-pair match counts (``core.models.PairRecord``), added as each duel result is recorded.

``count_duel_result`` runs inside ``record_duel_result``'s transaction: one upsert that adds the duel's
match counts to its pair's row (``INSERT ... SELECT ... ON CONFLICT DO UPDATE``: the competitors read
from the revisions by the same statement; atomic under concurrent results for the same pair; PostgreSQL
and SQLite). ``rebuild_pair_records`` recomputes every row from the finished
duels (the backfill, and the repair after duels were deleted by hand).
"""

from __future__ import annotations

from django.db import connection, transaction

from core.models import Duel, Revision
from core.models.pairs import PairRecord

#: Duel kinds whose results the ratings and the tie fit use.
RATED_KINDS = (Duel.Kind.LADDER, Duel.Kind.TOURNAMENT)
_COUNTERS = ("duels", "low_wins", "high_wins", "draws", "low_errors", "high_errors")


def _count_sql() -> str:
    """The upsert of :func:`count_duel_result`: the pair's sides read from the two revisions by the same
    statement (``INSERT ... SELECT``; no row for self-play), the duel's counters given for player 1 then
    player 2 and swapped by the sides' order."""
    table = PairRecord._meta.db_table
    qn = connection.ops.quote_name
    columns = ["environment_id", "low_id", "high_id", "rated", *_COUNTERS]
    first = "r1.competitor_id < r2.competitor_id"
    low_side = f"CASE WHEN {first} THEN %s ELSE %s END"  # player 1's counter first, player 2's second
    values = [
        "%s",
        f"CASE WHEN {first} THEN r1.competitor_id ELSE r2.competitor_id END",
        f"CASE WHEN {first} THEN r2.competitor_id ELSE r1.competitor_id END",
        "%s",
        "1",
        low_side,  # low_wins
        low_side,  # high_wins (given as player 2's, player 1's)
        "%s",  # draws
        low_side,  # low_errors
        low_side,  # high_errors
    ]
    updates = ", ".join(f"{qn(c)} = {qn(table)}.{qn(c)} + excluded.{qn(c)}" for c in _COUNTERS)
    revisions = qn(Revision._meta.db_table)
    return (
        f"INSERT INTO {qn(table)} ({', '.join(qn(c) for c in columns)}) "  # noqa: S608 - fixed identifiers
        f"SELECT {', '.join(values)} FROM {revisions} r1, {revisions} r2 "
        "WHERE r1.id = %s AND r2.id = %s AND r1.competitor_id <> r2.competitor_id "
        f"ON CONFLICT ({qn('low_id')}, {qn('high_id')}, {qn('rated')}) DO UPDATE SET {updates}"
    )


def count_duel_result(duel: Duel) -> None:
    """Add finished ``duel``'s match counts to its pair (self-play adds nothing): one statement, which
    reads the two revisions' competitors itself. Call inside the transaction that stores the result, so
    the counts and the result commit together."""
    w1, w2, e1, e2 = duel.player_1_wins, duel.player_2_wins, duel.player_1_errors, duel.player_2_errors
    params = [duel.environment_id, duel.kind in RATED_KINDS, w1, w2, w2, w1, duel.draws, e1, e2, e2, e1]
    with connection.cursor() as cursor:
        cursor.execute(_count_sql(), [*params, duel.revision_1_id, duel.revision_2_id])


#: Every finished duel between two different competitors, summed per pair and kind (PostgreSQL and SQLite;
#: the migration that created the table ran the same statement as its backfill).
REBUILD_SQL = """
INSERT INTO core_pairrecord
    (environment_id, low_id, high_id, rated, duels, low_wins, high_wins, draws, low_errors, high_errors)
SELECT d.environment_id,
       CASE WHEN r1.competitor_id < r2.competitor_id THEN r1.competitor_id ELSE r2.competitor_id END,
       CASE WHEN r1.competitor_id < r2.competitor_id THEN r2.competitor_id ELSE r1.competitor_id END,
       d.kind IN ('LADDER', 'TOURNAMENT'),
       COUNT(*),
       SUM(CASE WHEN r1.competitor_id < r2.competitor_id THEN d.player_1_wins ELSE d.player_2_wins END),
       SUM(CASE WHEN r1.competitor_id < r2.competitor_id THEN d.player_2_wins ELSE d.player_1_wins END),
       SUM(d.draws),
       SUM(CASE WHEN r1.competitor_id < r2.competitor_id THEN d.player_1_errors ELSE d.player_2_errors END),
       SUM(CASE WHEN r1.competitor_id < r2.competitor_id THEN d.player_2_errors ELSE d.player_1_errors END)
FROM core_duel d
JOIN core_revision r1 ON r1.id = d.revision_1_id
JOIN core_revision r2 ON r2.id = d.revision_2_id
WHERE d.state = 'FINISHED' AND r1.competitor_id <> r2.competitor_id {extra}
GROUP BY 1, 2, 3, 4
"""


def rebuild_pair_records(environment_id: int | None = None) -> None:
    """Recompute the pair rows (of one game, or all) from the finished duels, in one transaction.

    On PostgreSQL the table is locked first (results being recorded wait a moment), so a result is
    counted exactly once: either it committed before the rebuild read the duels, or it adds itself after.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("LOCK TABLE core_pairrecord IN EXCLUSIVE MODE")
        if environment_id is None:
            cursor.execute("DELETE FROM core_pairrecord")
            cursor.execute(REBUILD_SQL.format(extra=""))
        else:
            cursor.execute("DELETE FROM core_pairrecord WHERE environment_id = %s", [environment_id])
            cursor.execute(REBUILD_SQL.format(extra="AND d.environment_id = %s"), [environment_id])
