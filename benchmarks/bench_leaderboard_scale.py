"""What a new ratings version costs the web at 10,000 competitors: full rebuild vs the incremental snapshot.

Loads a fresh PostgreSQL database (``rl_arena_bench_leaderboard`` by default) the way ``bench_web.py`` does
(``--competitors`` competitors with ratings, ``--matches`` matches, the per-pair counts) and computes the
tie fit, with the settings of ``example.env``. Then, ``--rounds`` times, a rating round changes the ratings
of ``--changed`` competitors (new mu, sigma and conservative skill, a stamp later than every earlier one:
what ``tournament_manager.actions`` writes under the environment's lock), and the web reflects the new
version the two ways, alternating, in the same process:

- **full**: what every ratings version cost before: the whole ranking built from the database and every
  row serialized for the API (``tournament_manager.leaderboard.build_leaderboard`` + the API serializer);
- **incremental**: what the web does now: the process's snapshot patched with the changed rows only
  (``tournament_manager.leaderboard.leaderboard``) and their serialized rows (``web.api.leaderboard``).

Then the snapshot's periodic refresh (once a minute per process and game: names, owners, versions and
pauses change without a rating), ``--rounds`` times after ``--renamed`` competitors are renamed and one
paused or resumed, the two ways, alternating:

- **rebuild**: what the minute cost before: the ranking built again from one query of every column
  (``_build``), so every row is a new object and the API serializes every row again;
- **details**: what it costs now: the display columns alone read for every row and only the changed rows
  replaced (``_with_details``), so the API serializes only those again.

Prints the CPU milliseconds of this process per version (``time.process_time``: the web's CPU, not the
database's) and the wall milliseconds, medians, their ratio and the load average. Last lines:
``ratings version at N competitors: full F ms CPU, incremental I ms CPU (ratio R)`` and
``periodic refresh at N competitors: rebuild B ms CPU per minute, details D ms CPU per minute (ratio R)``.

    .venv/bin/python benchmarks/bench_leaderboard_scale.py [--competitors 10000] [--matches 200000]
        [--rounds 20] [--changed 20] [--renamed 5] [--db NAME] [--keep]
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--competitors", type=int, default=10_000)
    p.add_argument("--matches", type=int, default=200_000)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--changed", type=int, default=20, help="ratings a rating round changes")
    p.add_argument("--renamed", type=int, default=5, help="competitors renamed between two refreshes")
    p.add_argument("--db", default="rl_arena_bench_leaderboard")
    p.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    p.add_argument("--redis", default="redis://127.0.0.1:6379/14")
    p.add_argument("--keep", action="store_true", help="reuse the database when it has data")
    return p.parse_args()


def rating_round(environment_id: int, changed: int, rng: random.Random) -> None:
    """Change ``changed`` ratings the way a rating round does: new values, one stamp above every other."""
    from django.db import transaction
    from django.db.models import Max
    from django.utils import timezone

    from core.models import Environment, Rating

    with transaction.atomic():
        Environment.objects.select_for_update(no_key=True).only("pk").get(pk=environment_id)
        last = Rating.objects.filter(environment_id=environment_id).aggregate(m=Max("updated_at"))["m"]
        now = timezone.now()
        stamp = now if last is None or now > last else last + timedelta(microseconds=1)
        ids = list(Rating.objects.filter(environment_id=environment_id).values_list("pk", flat=True))
        rows = list(Rating.objects.filter(pk__in=rng.sample(ids, changed)))
        for r in rows:
            r.mu += rng.gauss(0, 0.5)
            r.sigma = max(0.8, r.sigma * 0.99)
            r.skill = r.mu - 3 * r.sigma
            r.matches += 10
            r.updated_at = stamp
        Rating.objects.bulk_update(rows, ["mu", "sigma", "skill", "matches", "updated_at"])


def rename_some(environment_id: int, renamed: int, k: int, rng: random.Random) -> None:
    """Rename ``renamed`` competitors and pause (or resume) one: what changes without touching a rating."""
    from core.models import Competitor

    ids = list(Competitor.objects.filter(environment_id=environment_id).values_list("pk", flat=True))
    picked = rng.sample(ids, renamed + 1)
    for pk in picked[:renamed]:
        Competitor.objects.filter(pk=pk).update(name=f"renamed-{k}-{pk}")
    status = Competitor.Status.PAUSED if k % 2 else Competitor.Status.ACTIVE
    Competitor.objects.filter(pk=picked[-1]).update(status=status)


def periodic_refresh(args: argparse.Namespace, environment_id: int) -> tuple[float, float]:
    """Median CPU ms of the minute's refresh, the rebuild it was and the details read it is, alternated."""
    from core.models import Environment
    from tournament_manager import leaderboard as board
    from tournament_manager.tie_fit import stored_fit
    from web.api import leaderboard as api
    from web.queries import leaderboard_version

    board.DETAILS_SECONDS = 1e9  # no refresh but the ones timed here

    def reflect() -> None:
        # The API's reflection of the refreshed snapshot: the rows that are new objects serialized again
        # (as on the next ratings version: a fresh version string here forces it).
        version = leaderboard_version(Environment(pk=environment_id)) + f"-{time.monotonic_ns()}"
        api._reflected[environment_id] = api._reflect(
            environment_id, version, api._reflected.get(environment_id)
        )

    def rebuild() -> None:
        board._snapshots[environment_id] = board._build(environment_id, stored_fit(environment_id))
        reflect()

    def details() -> None:
        board._snapshots[environment_id] = board._with_details(
            board._snapshots[environment_id], environment_id
        )
        reflect()

    reflect()
    rng = random.Random(5)
    serial = itertools.count()
    cpu: dict[str, list[float]] = {"rebuild": [], "details": []}
    wall: dict[str, list[float]] = {"rebuild": [], "details": []}
    load_before = os.getloadavg()[0]
    for k in range(args.rounds):
        order = [("rebuild", rebuild), ("details", details)]
        if k % 2:
            order.reverse()
        for name, fn in order:
            rename_some(environment_id, args.renamed, next(serial), rng)
            c0, w0 = time.process_time(), time.perf_counter()
            fn()
            cpu[name].append((time.process_time() - c0) * 1000)
            wall[name].append((time.perf_counter() - w0) * 1000)
    load_after = os.getloadavg()[0]
    # The refreshed snapshot must show exactly what a build from scratch shows.
    assert board._snapshots[environment_id].rows == board.build_leaderboard(environment_id)
    print(
        f"\nperiodic refresh (once a minute per process and game), {args.rounds} times after {args.renamed} "
        f"renames and a pause; load {load_before:.1f} -> {load_after:.1f}"
    )
    print(f"{'per refresh':<24} {'CPU ms (median)':>16} {'wall ms (median)':>17}")
    for name in cpu:
        print(f"{name:<24} {statistics.median(cpu[name]):16.1f} {statistics.median(wall[name]):17.1f}")
    return statistics.median(cpu["rebuild"]), statistics.median(cpu["details"])


def main() -> None:
    args = parse_args()
    import bench_web

    bench_web.setup_django(args)
    from django.core.cache import cache

    from core.models import Environment
    from tournament_manager import tie_fit
    from tournament_manager.leaderboard import build_leaderboard, leaderboard
    from web.api import serializers as s
    from web.api.leaderboard import serialized_rows

    if not (args.keep and bench_web._db_has_data()):
        bench_web.recreate_database(args)
        t0 = time.perf_counter()
        bench_web.load(args)
        took = time.perf_counter() - t0
        print(f"loaded {args.competitors:,} competitors, {args.matches:,} matches in {took:.0f} s")
    env = Environment.objects.get(slug="connect-four")
    cache.clear()
    t0 = time.perf_counter()
    tie_fit.refresh(env.pk)
    print(f"tie fit: {time.perf_counter() - t0:.1f} s")

    def full() -> None:
        rows = build_leaderboard(env.pk)
        [dict(r) for r in s.LeaderboardEntrySerializer(rows, many=True).data]

    def incremental() -> None:
        from web.queries import leaderboard_version

        serialized_rows(env.pk, leaderboard_version(env))
        leaderboard(env)

    incremental()  # the process's first build (cold), not a version change
    rng = random.Random(3)
    load_before = os.getloadavg()[0]
    cpu: dict[str, list[float]] = {"full": [], "incremental": []}
    wall: dict[str, list[float]] = {"full": [], "incremental": []}
    for k in range(args.rounds):
        order = [("full", full), ("incremental", incremental)]
        if k % 2:
            order.reverse()
        for name, fn in order:
            rating_round(env.pk, args.changed, rng)
            c0, w0 = time.process_time(), time.perf_counter()
            fn()
            cpu[name].append((time.process_time() - c0) * 1000)
            wall[name].append((time.perf_counter() - w0) * 1000)
    load_after = os.getloadavg()[0]
    # The snapshot must show exactly what a full build shows.
    assert [r.competitor_id for r in leaderboard(env)] == [r.competitor_id for r in build_leaderboard(env.pk)]
    print(
        f"\n{args.competitors:,} competitors, {args.rounds} rating rounds of {args.changed} changed ratings; "
        f"load {load_before:.1f} -> {load_after:.1f}"
    )
    print(f"{'per ratings version':<24} {'CPU ms (median)':>16} {'wall ms (median)':>17}")
    for name in cpu:
        print(f"{name:<24} {statistics.median(cpu[name]):16.1f} {statistics.median(wall[name]):17.1f}")
    f, i = statistics.median(cpu["full"]), statistics.median(cpu["incremental"])
    summary = (
        f"ratings version at {args.competitors:,} competitors: full {f:.0f} ms CPU, "
        f"incremental {i:.1f} ms CPU (ratio {f / max(i, 1e-9):.0f})"
    )
    b, d = periodic_refresh(args, env.pk)
    print(summary)
    print(
        f"periodic refresh at {args.competitors:,} competitors: rebuild {b:.0f} ms CPU per minute, "
        f"details {d:.1f} ms CPU per minute (ratio {b / max(d, 1e-9):.0f})"
    )


if __name__ == "__main__":
    main()
