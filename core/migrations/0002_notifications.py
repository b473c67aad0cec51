# Notifications (core.models.notification) and the user's notification settings.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="user",
            name="email_notifications",
            field=models.BooleanField(
                default=True,
                help_text="Also send notifications (failed revisions, pauses, tournaments) by e-mail.",
            ),
        ),
        migrations.AddField(
            model_name="user",
            name="unread_notifications",
            field=models.PositiveIntegerField(
                default=0, help_text="Count of unread notifications (kept by core.actions.notifications)."
            ),
        ),
        migrations.CreateModel(
            name="Notification",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("REVISION_FAILED", "revision failed"),
                            ("COMPETITOR_PAUSED", "competitor paused"),
                            ("TOURNAMENT_FINISHED", "tournament finished"),
                        ],
                        max_length=20,
                    ),
                ),
                ("object_key", models.CharField(max_length=100)),
                ("subject", models.CharField(max_length=200)),
                ("body", models.TextField(blank=True)),
                (
                    "link",
                    models.CharField(
                        blank=True, help_text="Site path the notification points to.", max_length=300
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("read_at", models.DateTimeField(blank=True, null=True)),
                ("email_sent_at", models.DateTimeField(blank=True, null=True)),
                ("email_error", models.TextField(blank=True)),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="notifications",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at", "-pk"],
                "indexes": [
                    models.Index(fields=["user", "-created_at"], name="core_notification_inbox"),
                    models.Index(
                        condition=models.Q(("read_at__isnull", True)),
                        fields=["user"],
                        name="core_notification_unread",
                    ),
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("user", "kind", "object_key"), name="core_notification_once"
                    )
                ],
            },
        ),
    ]
