"""What one matchmaking round costs at 10,000 competitors: the bounded pool against the whole league.

Loads a fresh PostgreSQL database (``rl_arena_bench_ladder_scale`` by default) the way
``bench_leaderboard_scale.py`` does (``bench_web.load``: ``--competitors`` competitors with ratings,
``--matches`` matches in ten-match ladder duels finished in the last hours, the per-pair counts; every
revision its own code), computes the stored tie fit, then runs ``--rounds`` matchmaking rounds of
``--batch`` duels each way, alternating, with the settings of ``example.env``:

- **pool**: ``tournament_manager.actions.matchmake`` as it is (the bounded pool of
  ``tournament_manager/ladder_pool.py``, its own advisory lock);
- **before** (``--compare REV``, default the commit before the pool): the same function as it was at that
  commit (every competitor read, the last 24 hours of ladder duels grouped twice, the environment's row
  lock held throughout), loaded from ``git show REV:tournament_manager/actions.py``.

The duels a round creates are deleted after it (not timed). Prints per round, medians: this process's CPU
ms (``time.process_time``: Django, planning), the PostgreSQL backends' CPU ms (the server processes of
``--db``), their sum (the round's CPU) and the wall ms, and the load average. Last line:
``matchmaking round at N competitors: P ms CPU (before B ms)``.

    .venv/bin/python benchmarks/bench_ladder_scale.py [--competitors 10000] [--matches 200000]
        [--rounds 10] [--batch 8] [--compare REV] [--db NAME] [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

#: The last commit whose matchmaking read every competitor (the comparison's default).
BEFORE = "9f74def"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--competitors", type=int, default=10_000)
    p.add_argument("--matches", type=int, default=200_000)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--batch", type=int, default=8, help="duels a round plans (the queue target's gap)")
    p.add_argument("--compare", default=BEFORE, help="commit of the old matchmaking ('' : none)")
    p.add_argument("--db", default="rl_arena_bench_ladder_scale")
    p.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    p.add_argument("--redis", default="redis://127.0.0.1:6379/13")
    p.add_argument("--keep", action="store_true", help="reuse the database when it has data")
    return p.parse_args()


def old_matchmake(rev: str) -> Callable[..., list]:
    """``matchmake`` as ``tournament_manager/actions.py`` had it at commit ``rev``."""
    source = subprocess.run(
        ["git", "show", f"{rev}:tournament_manager/actions.py"], cwd=REPO, check=True, capture_output=True
    ).stdout.decode()
    module = types.ModuleType("tournament_manager._actions_before")
    module.__file__ = f"{rev}:tournament_manager/actions.py"
    exec(compile(source, module.__file__, "exec"), module.__dict__)  # the repository's own code
    return module.matchmake


def main() -> None:
    args = parse_args()
    import bench_web
    from bench_duel_worker import postgres_cpu

    # The stored fit's file lives in DATA_DIR: one folder per database, so a fit never meets another's data.
    os.environ["DATA_DIR"] = str(Path(tempfile.gettempdir()) / f"{args.db}-data")
    bench_web.setup_django(args)
    from django.core.cache import cache
    from django.db import connection

    from core.models import Duel, Environment
    from tournament_manager import actions, tie_fit

    if not (args.keep and bench_web._db_has_data()):
        bench_web.recreate_database(args)
        t0 = time.perf_counter()
        bench_web.load(args)
        with connection.cursor() as cursor:  # every revision its own code (twins are never paired)
            cursor.execute(
                "UPDATE core_revision SET content_hash = md5(id::text) || md5(id::text), "
                "agent_ref = 'bench/agent:' || id"
            )
        cache.clear()
        seconds = time.perf_counter() - t0
        print(f"loaded {args.competitors:,} competitors, {args.matches:,} matches in {seconds:.0f} s")
    env = Environment.objects.get(slug="connect-four")
    cache.clear()  # the fit then comes from this database's own DATA_DIR, or is computed here
    if tie_fit.stored_fit(env.pk) is None:
        t0 = time.perf_counter()
        tie_fit.refresh(env.pk)
        print(f"tie fit: {time.perf_counter() - t0:.1f} s", flush=True)
    ways: dict[str, Callable[..., list]] = {"pool": actions.matchmake}
    if args.compare:
        ways["before"] = old_matchmake(args.compare)
    rng = random.Random(5)
    for fn in ways.values():  # warm: imports, the fit read once
        Duel.objects.filter(pk__in=[d.pk for d in fn(env.pk, rng=rng, batch_size=args.batch)]).delete()
    load_before = os.getloadavg()
    cpu: dict[str, list[float]] = {w: [] for w in ways}
    pg: dict[str, list[float]] = {w: [] for w in ways}
    wall: dict[str, list[float]] = {w: [] for w in ways}
    planned: dict[str, list[int]] = {w: [] for w in ways}
    for k in range(args.rounds):
        order = list(ways.items())
        if k % 2:
            order.reverse()
        for name, fn in order:
            p0, c0, w0 = postgres_cpu(args.db), time.process_time(), time.perf_counter()
            created = fn(env.pk, rng=rng, batch_size=args.batch)
            cpu[name].append((time.process_time() - c0) * 1000)
            wall[name].append((time.perf_counter() - w0) * 1000)
            pg[name].append((postgres_cpu(args.db) - p0) * 1000)
            planned[name].append(len(created))
            Duel.objects.filter(pk__in=[d.pk for d in created]).delete()
    load_after = os.getloadavg()
    print(
        f"\n{args.competitors:,} competitors, {args.matches:,} matches; {args.rounds} rounds of {args.batch} "
        f"duels each way; load average {' '.join(f'{x:.1f}' for x in load_before)} -> "
        f"{' '.join(f'{x:.1f}' for x in load_after)} (2 cores, shared)"
    )
    head = ("process CPU ms", "PostgreSQL CPU ms", "CPU ms", "wall ms", "duels")
    print(f"{'per round (median)':<20} {head[0]:>15} {head[1]:>18} {head[2]:>8} {head[3]:>8} {head[4]:>6}")
    total = {}
    for name in ways:
        c, p = statistics.median(cpu[name]), statistics.median(pg[name])
        total[name] = statistics.median([a + b for a, b in zip(cpu[name], pg[name], strict=True)])
        print(
            f"{name:<20} {c:15.1f} {p:18.1f} {total[name]:8.1f} {statistics.median(wall[name]):8.1f} "
            f"{statistics.median(planned[name]):6.0f}"
        )
    before = f" (before {total['before']:.0f} ms)" if "before" in total else ""
    print(f"matchmaking round at {args.competitors:,} competitors: {total['pool']:.0f} ms CPU{before}")


if __name__ == "__main__":
    main()
