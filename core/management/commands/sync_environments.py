"""``manage.py sync_environments``: mirror environments/*/info.yml into Environment rows."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.core.management.base import BaseCommand

from core.actions import sync_environments


def game_infos(*, include_synthetic: bool = False) -> list[dict[str, Any]]:
    """Every registered game's ``info.yml`` as a dict (from the ``environments`` registry). Games marked
    ``synthetic: true`` (test games such as hidden-skill) are left out unless asked for."""
    from environments import all_slugs, get_info

    infos = [get_info(slug) for slug in all_slugs()]
    return [dataclasses.asdict(i) for i in infos if include_synthetic or not i.extra.get("synthetic")]


class Command(BaseCommand):
    help = (
        "Create/update one Environment per game folder; deactivate games that disappeared or are synthetic."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--keep-missing", action="store_true", help="Do not deactivate missing games.")
        parser.add_argument(
            "--include-synthetic", action="store_true", help="Also sync test games marked 'synthetic: true'."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        infos = game_infos(include_synthetic=options["include_synthetic"])
        report = sync_environments(infos, deactivate_missing=not options["keep_missing"])
        for slug, what in sorted(report.items()):
            self.stdout.write(f"{slug}: {what}")
