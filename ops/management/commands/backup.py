"""``manage.py backup --out DIR [--keep N]``: one archive of the database and DATA_DIR (``ops/backup.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ops.backup import BackupError, backup, describe, prune


class Command(BaseCommand):
    help = "Back up the database and DATA_DIR into one archive; keep the newest --keep archives."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", type=Path, required=True, help="folder of the archives")
        parser.add_argument("--keep", type=int, default=0, help="keep only the newest N archives (0: all)")

    def handle(self, *args: Any, **options: Any) -> None:
        out: Path = options["out"]
        try:
            archive = backup(out)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"backup written: {describe(archive)}")
        if options["keep"] > 0:
            for old in prune(out, options["keep"]):
                self.stdout.write(f"pruned: {old}")
