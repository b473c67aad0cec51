"""``manage.py export_records <slug> --output FILE.jsonl.gz|FILE.parquet``: a game's records for training."""

from __future__ import annotations

import gzip
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.models import Environment
from core.records import RecordFilter, iter_records, parse_when


class Command(BaseCommand):
    help = (
        "Write every finished match of a game as JSON Lines (one step per line, see core/records.py), "
        "gzip-compressed, for training. Exports everything (staff view); filter with --since/--until/"
        "--min-rating."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="the game, e.g. connect-four")
        parser.add_argument("--output", required=True, help="file to write (.jsonl.gz)")
        parser.add_argument("--since", help="ISO date or date-time (inclusive)")
        parser.add_argument("--until", help="ISO date (whole day included) or date-time (exclusive)")
        parser.add_argument("--min-rating", type=float, help="both players' mu - 3 sigma after the duel")
        parser.add_argument("--public-only", action="store_true", help="only matches of public revisions")
        parser.add_argument(
            "--format",
            choices=("jsonl", "parquet"),
            help="jsonl (gzipped JSON Lines) or parquet (columns, core/records_parquet.py); default: from"
            " --output's suffix (.parquet), else jsonl",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        env = Environment.objects.filter(slug=options["slug"]).first()
        if env is None:
            raise CommandError(f"no game {options['slug']!r}; known: {_known()}")
        try:
            flt = RecordFilter(
                since=parse_when(options["since"]),
                until=parse_when(options["until"], end=True),
                min_rating=options["min_rating"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        viewer = None if options["public_only"] else _Everything()
        out = Path(options["output"])
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".part")
        started = time.perf_counter()
        if (options["format"] or ("parquet" if out.suffix == ".parquet" else "jsonl")) == "parquet":
            from core.records_parquet import ParquetUnavailable, write_parquet

            try:
                rows = write_parquet(env, viewer, flt, tmp)  # type: ignore[arg-type]
            except ParquetUnavailable as exc:
                raise CommandError(str(exc)) from exc
            tmp.replace(out)
            self.stdout.write(f"wrote {rows} rows to {out} in {time.perf_counter() - started:.1f} s")
            return
        lines = 0
        with gzip.open(tmp, "wb", compresslevel=6) as fh:
            for chunk in iter_records(env, viewer, flt):  # type: ignore[arg-type]
                fh.write(chunk)
                lines += chunk.count(b"\n")
        tmp.replace(out)
        elapsed = time.perf_counter() - started
        rate = lines / elapsed if elapsed > 0 else 0.0
        self.stdout.write(f"wrote {lines} lines to {out} in {elapsed:.1f} s ({rate:,.0f} lines/s)")


class _Everything:
    """The exporting operator: sees every match, like staff."""

    is_staff = True
    is_authenticated = True


def _known() -> str:
    return ", ".join(Environment.objects.order_by("slug").values_list("slug", flat=True)) or "none"
