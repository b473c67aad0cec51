"""Web speed at scale: 1,000 competitors and 1,000,000 matches in Postgres, served by gunicorn, under wrk.

Loads a fresh database (``rl_arena_bench_web`` by default) with ``COPY`` through psycopg, starts gunicorn,
then measures with ``wrk`` (Debian package ``wrk``) the requests/s and p95 latency of:

- ``/healthz`` - the baseline measured in the same run: the whole Django stack plus ``SELECT 1``;
- the game page with its 1,000-row leaderboard, the leaderboard partial the page polls, the leaderboard
  JSON, a competitor page (rating chart, duels, head to head over 1M matches) and a match replay JSON.

Each target's throughput is printed as a ratio to the baseline. It also prints the SQL queries each
page runs (via Django's test client in this process) and the time of the first, cold leaderboard request
(the Bradley-Terry tie fit over every rated match, cached afterwards).

    .venv/bin/python benchmarks/bench_web.py [--competitors 1000] [--matches 1000000] [--duration 10]
        [--connections 16] [--workers 2] [--keep]   # --keep reuses an already loaded database
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
MATCHES_PER_DUEL = 10
LUA = """
done = function(summary, latency, requests)
  io.write(string.format("P95_US %d\\n", latency:percentile(95)))
  io.write(string.format("NON2XX %d\\n", summary.errors.status))
end
"""


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--competitors", type=int, default=1000)
    p.add_argument("--matches", type=int, default=1_000_000)
    p.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    p.add_argument("--port", type=int, default=8931)
    p.add_argument("--db", default="rl_arena_bench_web")
    p.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="server URL without db name")
    p.add_argument("--redis", default="redis://127.0.0.1:6379/13", help="cache shared by gunicorn workers")
    p.add_argument("--keep", action="store_true", help="reuse the loaded database if present")
    return p.parse_args()


def setup_django(args: argparse.Namespace) -> None:
    os.environ["DATABASE_URL"] = f"{args.pg}/{args.db}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "core.settings"
    os.environ["REDIS_URL"] = args.redis
    os.environ.setdefault("SECRET_KEY", "bench-web-secret-" + "x" * 40)
    import django

    django.setup()


def recreate_database(args: argparse.Namespace) -> None:
    import psycopg

    with psycopg.connect(f"{args.pg}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{args.db}"')
        conn.execute(f'CREATE DATABASE "{args.db}"')
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO, check=True, env=os.environ)


def _columns(model: Any, values: dict[str, Any]) -> tuple[list[str], list[Any]]:
    """Every concrete column but the id, taking ``values`` or the field default (COPY needs them all)."""
    cols, defaults = [], []
    now = datetime.now(UTC)
    for f in model._meta.concrete_fields:
        if f.primary_key:
            continue
        cols.append(f.column)
        if f.attname in values:
            defaults.append(values[f.attname])
        elif getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
            defaults.append(now)
        else:
            d = f.get_default()  # the declared default, "" for text fields, None for nullable ones
            defaults.append(json.dumps(d) if f.get_internal_type() == "JSONField" and d is not None else d)
    return cols, defaults


def copy_rows(cur: Any, model: Any, fixed: dict[str, Any], varying: list[str], rows: Any) -> int:
    """COPY ``rows`` (tuples for the ``varying`` fields) into ``model``'s table; other columns get ``fixed``
    values or defaults. Returns the number of rows."""
    cols, defaults = _columns(model, fixed)
    attnames = [f.attname for f in model._meta.concrete_fields if not f.primary_key]
    slots = [attnames.index(a) for a in varying]
    n = 0
    with cur.copy(f'COPY "{model._meta.db_table}" ({", ".join(cols)}) FROM STDIN') as cp:
        for row in rows:
            record = list(defaults)
            for slot, value in zip(slots, row, strict=True):
                record[slot] = value
            cp.write_row(record)
            n += 1
    return n


def load(args: argparse.Namespace) -> dict[str, float]:
    """Fill the database; returns timings."""
    import psycopg
    from django.db import connection

    from core.actions import sync_environments
    from core.management.commands.sync_environments import game_infos
    from core.models import Competitor, Duel, Environment, Match, Rating, RatingHistory, Revision, User

    t0 = time.perf_counter()
    sync_environments(game_infos())
    env = Environment.objects.get(slug="connect-four")
    rng = random.Random(7)
    n_comp = args.competitors
    n_users = max(1, n_comp // 5)
    n_duels = args.matches // MATCHES_PER_DUEL
    now = datetime.now(UTC)
    dsn = connection.settings_dict
    with psycopg.connect(f"{args.pg}/{dsn['NAME']}") as conn, conn.cursor() as cur:
        copy_rows(
            cur,
            User,
            {"password": "!", "is_active": True, "date_joined": now},
            ["email", "display_name", "team"],
            ((f"user{i}@bench.example", f"User {i}", f"Team {i % 17}") for i in range(n_users)),
        )
        cur.execute("SELECT min(id) FROM core_user")
        u0 = cur.fetchone()[0]
        copy_rows(
            cur,
            Competitor,
            {"environment_id": env.pk, "is_public": True, "next_version": 2, "status": "ACTIVE"},
            ["owner_id", "name"],
            ((u0 + i % n_users, f"bot-{i:04d}") for i in range(n_comp)),
        )
        cur.execute("SELECT min(id) FROM core_competitor")
        c0 = cur.fetchone()[0]
        copy_rows(
            cur,
            Revision,
            {
                "version": 1,
                "state": "ELIGIBLE",
                "zip_size": 1000,
                "content_hash": "0" * 64,
                "is_public": True,
            },
            ["competitor_id", "zip_path"],
            ((c0 + i, f"submissions/{c0 + i}/1-x.zip") for i in range(n_comp)),
        )
        cur.execute(
            "UPDATE core_competitor c SET current_revision_id = r.id FROM core_revision r "
            "WHERE r.competitor_id = c.id"
        )
        cur.execute("SELECT competitor_id, id FROM core_revision")
        rev_of = dict(cur.fetchall())
        skill = [rng.gauss(25, 5) for _ in range(n_comp)]
        t_users = time.perf_counter()

        def duel_rows():
            for d in range(n_duels):
                a = rng.randrange(n_comp)
                b = (a + rng.randrange(1, n_comp)) % n_comp
                p = 1 / (1 + 10 ** ((skill[b] - skill[a]) / 8))
                w1 = sum(rng.random() < p for _ in range(MATCHES_PER_DUEL))
                w2 = MATCHES_PER_DUEL - w1
                result = "PLAYER_1_WIN" if w1 > w2 else "PLAYER_2_WIN" if w2 > w1 else "DRAW"
                when = now - timedelta(seconds=n_duels - d)
                yield (rev_of[c0 + a], rev_of[c0 + b], w1, w2, float(w1), float(w2), result, when, when, when)

        copy_rows(
            cur,
            Duel,
            {"environment_id": env.pk, "state": "FINISHED", "kind": "LADDER", "rated": True, "attempts": 1},
            [
                "revision_1_id",
                "revision_2_id",
                "player_1_wins",
                "player_2_wins",
                "player_1_score",
                "player_2_score",
                "result",
                "finished_at",
                "rated_at",
                "created_at",
            ],
            duel_rows(),
        )
        t_duels = time.perf_counter()
        cur.execute("SELECT id, player_1_wins FROM core_duel ORDER BY id")
        duels = cur.fetchall()
        final = json.dumps(
            [{"board": [[0] * 7 for _ in range(6)], "to_move": 0, "winner": None, "done": False}]
        )

        def match_rows():
            for duel_id, w1 in duels:
                for k in range(MATCHES_PER_DUEL):
                    won1 = k < w1
                    yield (
                        duel_id,
                        k,
                        "PLAYER_1_WIN" if won1 else "PLAYER_2_WIN",
                        "PLAYER_1" if k % 2 == 0 else "PLAYER_2",
                        1.0 if won1 else 0.0,
                        0.0 if won1 else 1.0,
                        final,
                    )

        copy_rows(
            cur,
            Match,
            {"error_kind": "", "error_msg": "", "actions": "[]", "move_times": "[]"},
            ["duel_id", "index", "result", "first_player", "player_1_score", "player_2_score", "states"],
            match_rows(),
        )
        t_matches = time.perf_counter()
        copy_rows(
            cur,
            Rating,
            {"environment_id": env.pk, "matches": 200, "wins": 90, "draws": 10, "losses": 100, "duels": 20},
            ["competitor_id", "mu", "sigma", "skill", "last_played_at"],
            (
                (c0 + i, skill[i], 1.2 + (i % 7) * 0.1, skill[i] - 3 * (1.2 + (i % 7) * 0.1), now)
                for i in range(n_comp)
            ),
        )
        cur.execute("SELECT id FROM core_rating")
        rating_ids = [r[0] for r in cur.fetchall()]
        copy_rows(
            cur,
            RatingHistory,
            {},
            ["rating_id", "mu", "sigma", "created_at"],
            (
                (rid, 25 + k * 0.1, 8.3 - k * 0.3, now - timedelta(hours=30 - k))
                for rid in rating_ids
                for k in range(20)
            ),
        )
        conn.commit()
        cur.execute("ANALYZE")
    return {
        "users+competitors+revisions": t_users - t0,
        f"{n_duels:,} duels": t_duels - t_users,
        f"{args.matches:,} matches": t_matches - t_duels,
        "total": time.perf_counter() - t0,
    }


def sample_ids() -> dict[str, int]:
    from core.models import Competitor, Match

    comp = Competitor.objects.order_by("pk").first()
    match = Match.objects.order_by("-pk").only("pk").first()
    return {"competitor": comp.pk, "match": match.pk}


def count_queries(ids: dict[str, int]) -> dict[str, int]:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    out = {}
    for name, path in targets(ids).items():
        with CaptureQueriesContext(connection) as ctx:
            resp = client.get(path, HTTP_HOST="127.0.0.1")
        assert resp.status_code == 200, (path, resp.status_code)
        out[name] = len(ctx)
    return out


def targets(ids: dict[str, int]) -> dict[str, str]:
    return {
        "healthz (baseline)": "/healthz",
        "game page (leaderboard + rules)": "/games/connect-four/",
        "leaderboard partial (polled)": "/games/connect-four/leaderboard/",
        "leaderboard JSON": "/api/environments/connect-four/leaderboard/",
        "competitor page": f"/competitors/{ids['competitor']}/",
        "match replay JSON": f"/api/matches/{ids['match']}/replay/",
    }


def start_gunicorn(args: argparse.Namespace, log_path: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "DEBUG": "0",
        "DATABASE_CONN_MAX_AGE": "600",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "LOG_LEVEL": "warning",
    }
    cmd = [
        str(Path(sys.executable).with_name("gunicorn")),
        "core.wsgi:application",
        "-w",
        str(args.workers),
        "-b",
        f"127.0.0.1:{args.port}",
        "--log-level",
        "warning",
    ]
    log = open(log_path, "wb")  # noqa: SIM115 - kept open for the process' lifetime
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{args.port}"
    for _ in range(120):
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("gunicorn did not start:\n" + log_path.read_text(errors="replace")[-3000:])


def wrk(url: str, args: argparse.Namespace, script: Path) -> tuple[float, float, int]:
    out = subprocess.run(
        ["wrk", "-t2", f"-c{args.connections}", f"-d{args.duration}s", "-s", str(script), url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p95_ms = int(re.search(r"P95_US (\d+)", out).group(1)) / 1000
    non2xx = int(re.search(r"NON2XX (\d+)", out).group(1))
    return rps, p95_ms, non2xx


def main() -> None:
    args = parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is missing: apt-get install wrk")
    setup_django(args)
    from core.models import Match

    if args.keep and _db_has_data():
        print(f"reusing database {args.db} ({Match.objects.count():,} matches)")
    else:
        recreate_database(args)
        timings = load(args)
        print(f"Loaded {args.competitors:,} competitors and {args.matches:,} matches into {args.db}:")
        for what, secs in timings.items():
            print(f"  {what:<30} {secs:7.1f} s")
    from django.core.cache import cache

    cache.clear()
    ids = sample_ids()
    t = time.perf_counter()
    from core.models import Environment
    from web import queries

    rows = queries.leaderboard(Environment.objects.get(slug="connect-four"))
    cold = time.perf_counter() - t
    t = time.perf_counter()
    queries.leaderboard(Environment.objects.get(slug="connect-four"))
    warm = time.perf_counter() - t
    print(
        f"\nleaderboard() of {len(rows):,} rows: cold {cold:.2f} s (Bradley-Terry fit over rated matches), "
        f"warm {warm * 1000:.1f} ms (fit cached in Redis)"
    )
    print("\nSQL queries per request (warm cache):")
    for name, n in count_queries(ids).items():
        print(f"  {name:<34} {n:3d}")

    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "p95.lua"
        script.write_text(LUA)
        proc = start_gunicorn(args, Path(tmp) / "gunicorn.log")
        try:
            base = f"http://127.0.0.1:{args.port}"
            results = {}
            for name, path in targets(ids).items():
                urllib.request.urlopen(base + path, timeout=120).read()
                results[name] = wrk(base + path, args, script)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
    base_rps = results["healthz (baseline)"][0]
    print(
        f"\nwrk: {args.duration} s per target, {args.connections} connections, gunicorn -w {args.workers} "
        f"(sync), {os.cpu_count()} CPUs shared with wrk"
    )
    print(f"  {'target':<34} {'req/s':>9} {'p95 ms':>8} {'vs baseline':>12} {'non-2xx':>8}")
    for name, (rps, p95, bad) in results.items():
        print(f"  {name:<34} {rps:9.1f} {p95:8.1f} {rps / base_rps:11.2f}x {bad:8d}")


def _db_has_data() -> bool:
    from django.db import DatabaseError

    from core.models import Match

    try:
        return Match.objects.exists()
    except DatabaseError:
        return False


if __name__ == "__main__":
    main()
