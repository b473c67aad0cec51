# The daily budget of a matchmaking round's candidates read through an index (issue 28 item 1).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0016_blob_store"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="duel",
            index=models.Index(
                condition=models.Q(("finished_at__isnull", False), ("kind", "LADDER")),
                fields=["revision_1", "finished_at"],
                name="core_duel_ladder_p1_day",
            ),
        ),
        migrations.AddIndex(
            model_name="duel",
            index=models.Index(
                condition=models.Q(("finished_at__isnull", False), ("kind", "LADDER")),
                fields=["revision_2", "finished_at"],
                name="core_duel_ladder_p2_day",
            ),
        ),
    ]
