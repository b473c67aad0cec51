"""``manage.py restore ARCHIVE --yes``: replace the database and DATA_DIR with a backup (``ops/backup.py``).

Stop the web tier and the workers first (the database server stays up): a restore replaces every table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ops.backup import BackupError, restore


class Command(BaseCommand):
    help = "Restore a backup archive made by `manage.py backup` (replaces the database and DATA_DIR)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("archive", type=Path)
        parser.add_argument("--yes", action="store_true", help="really replace this arena's data")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["yes"]:
            raise CommandError("a restore replaces this arena's database and DATA_DIR: add --yes")
        try:
            manifest = restore(options["archive"])
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"restored the backup of {manifest['created_at']} ({manifest['database']})")
