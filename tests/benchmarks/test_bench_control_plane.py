"""The control-plane benchmark at tiny scale, so it cannot rot: it runs end to end against the real
PostgreSQL and Redis, prints ``results/s: N`` last, and every duel it drives ends FINISHED and rated exactly
once. No wall-clock threshold: what is asserted is the result path's outcome, not its speed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks" / "bench_control_plane.py"
REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
DUELS = 24

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def _server_url() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        pytest.skip("the control-plane benchmark measures PostgreSQL; DATABASE_URL names another database")
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def test_bench_control_plane_records_and_rates_every_duel_exactly_once(tmp_path: Path) -> None:
    import psycopg

    server = _server_url()
    db = f"test_bench_cp_{uuid.uuid4().hex[:8]}"
    summary = tmp_path / "summary.json"
    cmd = [
        sys.executable,
        str(BENCH),
        *("--duels", str(DUELS), "--workers", "2", "--raters", "1", "--competitors", "6", "--pool", "2"),
        *(
            "--error-share",
            "0.25",
            "--heartbeats",
            "1",
            "--live-writes",
            "2",
            "--tie-fit-delay",
            "1",
            "--timeout",
            "240",
        ),
        *("--pg", server, "--db", db, "--redis", REDIS_URL, "--json", str(summary), "--keep"),
    ]
    try:
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=420)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        lines = [line for line in done.stdout.splitlines() if line.strip()]
        assert re.fullmatch(r"results/s: \d+\.\d", lines[-1]), lines[-5:]
        assert float(lines[-1].split()[1]) > 0
        assert any(line.startswith("exactly once: ok") for line in lines), lines
        report = json.loads(summary.read_text())
        assert report["problems"] == []
        assert report["verify"]["duels"] == DUELS

        with psycopg.connect(f"{server}/{db}") as conn:

            def one(sql: str) -> object:
                return conn.execute(sql).fetchone()[0]

            assert one("SELECT count(*) FROM core_duel") == DUELS
            assert one("SELECT count(*) FROM core_duel WHERE state = 'FINISHED'") == DUELS
            assert one("SELECT count(*) FROM core_duel WHERE rated AND rated_at IS NOT NULL") == DUELS
            assert one("SELECT count(*) FROM core_match") == 10 * DUELS
            # rated exactly once: one history row per (rating, duel) and every duel counted once per side
            assert one("SELECT count(*) FROM core_ratinghistory") == 2 * DUELS
            assert (
                one(
                    "SELECT count(*) FROM (SELECT duel_id FROM core_ratinghistory GROUP BY duel_id "
                    "HAVING count(*) <> 2) AS odd"
                )
                == 0
            )
            assert one("SELECT sum(duels) FROM core_rating") == 2 * DUELS
            assert one("SELECT sum(matches) FROM core_rating") == 2 * 10 * DUELS

            # Disk accounting: per-result tables apart from the rating rows; after VACUUM the bytes in use
            # hold at least the live rows and at most what the run left on disk.
            assert any(line.startswith("disk per result, as the run left it: ") for line in lines), lines
            assert any(line.startswith("disk per result, after VACUUM: ") for line in lines), lines
            grown, used = report["disk"]["grown"], report["disk"]["in_use_after_vacuum"]
            for table in ("core_duel", "core_match", "core_ratinghistory"):
                rows = float(one(f"SELECT sum(pg_column_size(t.*)) FROM {table} t"))
                assert rows <= used[table]["heap"] <= grown[table]["heap"], (table, rows, used, grown)
                assert 0 < used[table]["indexes"] <= grown[table]["indexes"], (table, used, grown)
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
