"""``manage.py recompute_ratings [slug ...]``: rebuild ratings from the stored results."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from core.models import Environment
from tournament_manager.actions import recompute_ratings


class Command(BaseCommand):
    """Rebuild the ratings of the given environments (default: all) from every stored duel."""

    help = "Rebuild TrueSkill ratings from stored results (all environments unless slugs are given)."

    def add_arguments(self, parser: Any) -> None:
        """Optional environment slugs."""
        parser.add_argument("slugs", nargs="*", help="environment slugs (default: every environment)")

    def handle(self, *args: Any, **options: Any) -> None:
        """Recompute and report the number of duels replayed per environment."""
        envs = Environment.objects.all()
        if options["slugs"]:
            envs = envs.filter(slug__in=options["slugs"])
            missing = set(options["slugs"]) - set(envs.values_list("slug", flat=True))
            if missing:
                raise CommandError(f"unknown environment(s): {', '.join(sorted(missing))}")
        for env in envs.order_by("slug"):
            n = recompute_ratings(env.pk)
            self.stdout.write(f"{env.slug}: replayed {n} duel(s)")
