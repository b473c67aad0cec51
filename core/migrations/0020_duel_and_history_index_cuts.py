"""Indexes that had no reader of their own (issue 29: disk per result).

- ``core_duel``: the single-column foreign-key indexes on ``environment_id``, ``revision_1_id`` and
  ``tournament_id`` go; ``core_duel_env_recent`` (environment, -finished_at), ``core_duel_pair``
  (revision_1, revision_2) and ``core_duel_tournament`` (tournament, state) start with the same column and
  serve every lookup by it, the PROTECT checks of a deleted environment or revision and the CASCADE of a
  deleted tournament included. ``core_duel_tournament`` becomes partial (tournament NOT NULL): ladder
  duels, nearly all of them, are never looked up by tournament.
- ``core_ratinghistory``: the unique (rating, duel) becomes (duel, rating), so that it serves the SET NULL
  of a deleted duel, and both single-column foreign-key indexes go (``core_ratinghistory_timeline``,
  (rating, created_at), serves every lookup by rating and the CASCADE of a deleted rating).

The foreign-key indexes are dropped by name (Django's AlterField would also drop and re-add each foreign
key, checking every row again under the table's lock). On a large platform the two rebuilt indexes take
the time of a CREATE INDEX each (core_duel and core_ratinghistory locked for writes meanwhile).
"""

import django.db.models.deletion
from django.db import migrations, models

FK_INDEXES = {
    "core_duel_environment_id_da94ded8": ("core_duel", "environment_id"),
    "core_duel_revision_1_id_58f2fdf0": ("core_duel", "revision_1_id"),
    "core_duel_tournament_id_c36679b7": ("core_duel", "tournament_id"),
    "core_ratinghistory_duel_id_3cfda0f8": ("core_ratinghistory", "duel_id"),
    "core_ratinghistory_rating_id_492bee43": ("core_ratinghistory", "rating_id"),
}


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0019_match_packed_moves"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="ratinghistory",
            name="core_ratinghistory_once_per_duel",
        ),
        migrations.AddConstraint(
            model_name="ratinghistory",
            constraint=models.UniqueConstraint(
                fields=("duel", "rating"), name="core_ratinghistory_once_per_duel"
            ),
        ),
        migrations.RemoveIndex(
            model_name="duel",
            name="core_duel_tournament",
        ),
        migrations.AddIndex(
            model_name="duel",
            index=models.Index(
                condition=models.Q(("tournament__isnull", False)),
                fields=["tournament", "state"],
                name="core_duel_tournament",
            ),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="duel",
                    name="environment",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="duels",
                        to="core.environment",
                    ),
                ),
                migrations.AlterField(
                    model_name="duel",
                    name="revision_1",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="duels_as_player_1",
                        to="core.revision",
                    ),
                ),
                migrations.AlterField(
                    model_name="duel",
                    name="tournament",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="duels",
                        to="core.tournament",
                    ),
                ),
                migrations.AlterField(
                    model_name="ratinghistory",
                    name="duel",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="core.duel",
                    ),
                ),
                migrations.AlterField(
                    model_name="ratinghistory",
                    name="rating",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="history",
                        to="core.rating",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f"DROP INDEX IF EXISTS {name}",
                    f'CREATE INDEX {name} ON {table} ("{column}")',
                )
                for name, (table, column) in FK_INDEXES.items()
            ],
        ),
    ]
