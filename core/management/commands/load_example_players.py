"""``manage.py load_example_players``: a demo user with the random and minimax players in every game."""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from core.actions import submit_revision
from core.models import Environment, Revision, User

EXAMPLES_DIR = Path(settings.BASE_DIR) / "example_players"
DEFAULT_PLAYERS = ("random", "minimax")


def zip_folder(folder: Path) -> bytes:
    """The files of ``folder`` (recursively, no caches) as zip bytes with ``player.py`` at the top."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                info = zipfile.ZipInfo(str(path.relative_to(folder)), date_time=(2020, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, path.read_bytes())
    return buffer.getvalue()


def load_example_players(email: str, players: tuple[str, ...] = DEFAULT_PLAYERS) -> list[Revision]:
    """Submit each example player to each active environment as ``email``'s competitors, skipping
    uploads identical to the competitor's latest revision. Returns the new revisions."""
    user = User.objects.filter(email=email).first() or User.objects.create_user(
        email=email, display_name="Demo", password=None
    )
    created = []
    for env in Environment.objects.filter(is_active=True).order_by("slug"):
        for name in players:
            data = zip_folder(EXAMPLES_DIR / name)
            sha = hashlib.sha256(data).hexdigest()
            if Revision.objects.filter(
                competitor__owner=user, competitor__environment=env, competitor__name=name, content_hash=sha
            ).exists():
                continue
            created.append(submit_revision(user, env.slug, name, data, is_public=True))
    return created


class Command(BaseCommand):
    help = "Create a demo user and upload example_players/{random,minimax} to every environment."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--email", default="demo@example.com")
        parser.add_argument("--players", nargs="+", default=list(DEFAULT_PLAYERS))

    def handle(self, *args: Any, **options: Any) -> None:
        revisions = load_example_players(options["email"], tuple(options["players"]))
        self.stdout.write(f"submitted {len(revisions)} revision(s) for {options['email']}")
