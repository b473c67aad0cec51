"""``manage.py start_tournament <slug>``: start the next tournament edition of an environment now."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from core.models import Environment
from tournament_manager.actions import start_tournament


class Command(BaseCommand):
    """Start a round-robin edition over the environment's eligible revisions."""

    help = "Start the next tournament edition (round robin over the current eligible revisions)."

    def add_arguments(self, parser: Any) -> None:
        """The environment slug."""
        parser.add_argument("slug")

    def handle(self, *args: Any, **options: Any) -> None:
        """Start the edition and report its size."""
        env = Environment.objects.filter(slug=options["slug"]).first()
        if env is None:
            raise CommandError(f"unknown environment {options['slug']!r}")
        tournament = start_tournament(env.pk)
        if tournament is None:
            raise CommandError(f"{env.slug}: fewer than two eligible revisions, no edition started")
        self.stdout.write(
            f"{env.slug}: edition {tournament.edition} started with {tournament.duels_total} duel(s)"
        )
