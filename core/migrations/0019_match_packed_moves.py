"""A match's actions and move times packed in one bytea (``core/match_moves.py``) instead of two jsonb
arrays of numerics, and no separate index on ``core_match.duel_id`` (the unique (duel, index) index
serves every lookup by duel).

Forward: every row's ``actions`` and ``move_times`` are packed into ``packed_moves`` (in batches of
``BATCH`` rows, one ``UPDATE`` each on PostgreSQL, which also empties the two JSON columns so the new row
versions are small), then the two columns go. Backward: the columns come back, filled from
``packed_moves``. Either way a reader sees the same lists. On PostgreSQL the forward step writes a new
version of every row of ``core_match`` in the migration's transaction, under the table's lock (about 3
minutes per million rows on the 2-core development machine at load 5-10); the old versions' space is
reused by new rows after a ``VACUUM`` and given back to the system only by ``VACUUM FULL core_match``."""

import json

from django.db import migrations, models

from core.match_moves import pack, unpack

BATCH = 5000


def _batches(Match):
    last = 0
    while True:
        rows = list(Match.objects.filter(id__gt=last).order_by("id").values_list("id", flat=True)[:BATCH])
        if not rows:
            return
        yield rows
        last = rows[-1]


def pack_moves(apps, schema_editor):
    Match = apps.get_model("core", "Match")
    postgres = schema_editor.connection.vendor == "postgresql"
    for ids in _batches(Match):
        rows = Match.objects.filter(id__in=ids).values_list("id", "actions", "move_times")
        packed = [(pk, pack(actions, move_times)) for pk, actions, move_times in rows]
        if postgres:
            with schema_editor.connection.cursor() as cursor:
                cursor.execute(
                    "UPDATE core_match AS m SET packed_moves = v.p, actions = '[]', move_times = '[]' "
                    "FROM UNNEST(%s::bigint[], %s::bytea[]) AS v(id, p) WHERE m.id = v.id",
                    [[pk for pk, _ in packed], [p for _, p in packed]],
                )
        else:
            for pk, p in packed:
                Match.objects.filter(id=pk).update(packed_moves=p, actions=[], move_times=[])


def unpack_moves(apps, schema_editor):
    Match = apps.get_model("core", "Match")
    postgres = schema_editor.connection.vendor == "postgresql"
    for ids in _batches(Match):
        rows = [
            (pk, *unpack(data))
            for pk, data in Match.objects.filter(id__in=ids).values_list("id", "packed_moves")
        ]
        if postgres:
            with schema_editor.connection.cursor() as cursor:
                cursor.execute(
                    "UPDATE core_match AS m SET actions = v.a::jsonb, move_times = v.t::jsonb "
                    "FROM UNNEST(%s::bigint[], %s::text[], %s::text[]) AS v(id, a, t) WHERE m.id = v.id",
                    [
                        [r[0] for r in rows],
                        [json.dumps(r[1]) for r in rows],
                        [json.dumps(r[2]) for r in rows],
                    ],
                )
        else:
            for pk, actions, move_times in rows:
                Match.objects.filter(id=pk).update(actions=actions, move_times=move_times)


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0018_duel_stop_rule_fields"),
    ]

    operations = [
        migrations.AddField(
            model_name="match",
            name="packed_moves",
            field=models.BinaryField(
                default=b"", help_text="The actions and move times, core.match_moves.pack (b'': neither)."
            ),
        ),
        migrations.RunPython(pack_moves, unpack_moves, elidable=False),
        migrations.RemoveField(model_name="match", name="actions"),
        migrations.RemoveField(model_name="match", name="move_times"),
        # Only the index goes: Django's AlterField would also drop and re-add the foreign key, which
        # checks every row again under the table's lock.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="match",
                    name="duel",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="matches",
                        to="core.duel",
                    ),
                )
            ],
            database_operations=[
                migrations.RunSQL(
                    "DROP INDEX IF EXISTS core_match_duel_id_6c4127d4",
                    "CREATE INDEX core_match_duel_id_6c4127d4 ON core_match (duel_id)",
                )
            ],
        ),
    ]
