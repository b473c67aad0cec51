"""``manage.py prune_data [--dry-run]``: apply the retention settings now (``ops/retention.py``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ops.retention import enabled, prune


class Command(BaseCommand):
    help = "Prune old match states, retired replays and unplayable zips, as the RETENTION_* settings say."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="count what would be pruned, change nothing"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not enabled():
            self.stdout.write(
                "retention is off: set RETENTION_MATCH_STATES_DAYS, RETENTION_RETIRED_REPLAYS_DAYS"
                " or RETENTION_UNPLAYABLE_ZIPS_DAYS (example.env)"
            )
            return
        report = prune(dry_run=options["dry_run"])
        self.stdout.write(("would prune: " if options["dry_run"] else "pruned: ") + str(report))
