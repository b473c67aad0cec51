"""A backup of a populated arena restores it whole: leaderboards, replays, ratings, data folders, uploads."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.urls import reverse

from run_duel.agent_data import archive_of

pytestmark = pytest.mark.django_db(transaction=True)


def _populated(eligible: Any) -> dict[str, Any]:
    from core.actions import schedule_duel
    from core.models import StoredAgentData
    from duel_runner.tasks import run_duel
    from tournament_manager.actions import rate_pending_duels

    revisions = [
        eligible(player, "tic-tac-toe", name) for player, name in (("minimax", "mm"), ("random", "rnd"))
    ]
    assert [r.state for r in revisions] == ["ELIGIBLE", "ELIGIBLE"]
    duels = [schedule_duel(revisions[0], revisions[1]), schedule_duel(revisions[1], revisions[0])]
    assert [run_duel(d.pk) for d in duels] == ["recorded", "recorded"]
    assert rate_pending_duels(revisions[0].competitor.environment_id) == 2
    StoredAgentData.objects.update_or_create(
        competitor=revisions[0].competitor,
        defaults={"archive": archive_of({"memory/book.txt": b"opening e4"}), "generation": 3, "files": 1},
    )
    return {"revisions": revisions, "duels": duels}


def _snapshot(arena: dict[str, Any], data_dir: Path) -> dict[str, Any]:
    """What users and owners see, and what the database and DATA_DIR hold for them."""
    from core.models import Match, Rating, Revision, StoredAgentData

    client = Client()
    pages = {
        "leaderboard": reverse("web:leaderboard", args=["tic-tac-toe"]),
        "game": reverse("web:game", args=["tic-tac-toe"]),
        **{f"duel {d.pk}": reverse("web:duel", args=[d.pk]) for d in arena["duels"]},
        **{f"match {m.pk}": reverse("web:match", args=[m.pk]) for m in Match.objects.all()},
    }
    html = {}
    for name, url in pages.items():
        response = client.get(url)
        assert response.status_code == 200, name
        html[name] = response.content.decode()
    return {
        "pages": html,
        "ratings": sorted(Rating.objects.values_list("competitor_id", "mu", "sigma")),
        "replays": sorted((m.pk, m.states, m.actions, m.move_times) for m in Match.objects.all()),
        "data folders": [
            (d.competitor_id, bytes(d.archive), d.generation) for d in StoredAgentData.objects.all()
        ],
        "uploads": {r.zip_path: (data_dir / r.zip_path).read_bytes() for r in Revision.objects.all()},
    }


def test_a_backup_restores_a_wiped_arena_identically(eligible: Any, data_dir: Path, tmp_path: Path) -> None:
    from django.core.cache import cache

    arena = _populated(eligible)
    before = _snapshot(arena, data_dir)

    call_command("backup", "--out", str(tmp_path / "backups"))
    archives = list((tmp_path / "backups").glob("arena-backup-*.tar"))
    assert len(archives) == 1

    call_command("flush", interactive=False)  # the database wiped
    for child in data_dir.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    cache.clear()
    with pytest.raises(Exception):  # noqa: B017 - any failure: nothing is left to show
        _snapshot(arena, data_dir)

    call_command("restore", str(archives[0]), "--yes")
    cache.clear()
    connection.close()
    assert _snapshot(arena, data_dir) == before


def test_a_corrupted_archive_is_refused_before_anything_is_replaced(
    eligible: Any, data_dir: Path, tmp_path: Path
) -> None:
    from django.core.management.base import CommandError

    from core.models import Revision

    eligible("random", "tic-tac-toe", "kept")
    call_command("backup", "--out", str(tmp_path))
    archive = next(tmp_path.glob("arena-backup-*.tar"))
    raw = bytearray(archive.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one flipped byte inside a part
    archive.write_bytes(bytes(raw))
    with pytest.raises(CommandError, match=r"does not match its digest|not a readable backup"):
        call_command("restore", str(archive), "--yes")
    assert Revision.objects.filter(competitor__name="kept").exists()


def test_the_backup_script_keeps_the_newest_archives(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[2]
    if connection.vendor != "postgresql" or connection.settings_dict["NAME"].startswith("file:"):
        pytest.skip("the script runs in its own process: it needs the test database on a server")
    env = {
        **__import__("os").environ,
        "DATABASE_URL": _database_url(),
        "DATA_DIR": str(tmp_path / "data"),
    }
    for _ in range(3):
        done = subprocess.run(
            [str(repo / "scripts" / "backup.sh"), str(tmp_path / "out"), "2"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "out").glob("arena-backup-*.tar"))) == 2


def _database_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
