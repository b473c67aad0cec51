"""Duels per minute of one machine running several Docker duels at once: one core per duel vs unpinned.

    .venv/bin/python benchmarks/bench_duel_throughput.py [--workers N] [--duels 6] [--matches 100]

``--workers`` threads (default: one per usable core, as a worker with that concurrency) each play
``--duels`` 100-match Connect Four duels, random vs random, back to back with the real referee and Docker
sandbox, first with ``pin_cpus=True`` (each duel claims its own core once its agents are ready) and then
unpinned, alternating the two modes ``--rounds`` times. Prints duels per minute per mode (wall time of a
whole round, containers started and removed included), the ratio, and how many duels got a core.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_images import build_random_image  # noqa: E402

from run_duel.referee import play_duel  # noqa: E402
from run_duel.sandbox.base import LaunchSpec, Limits  # noqa: E402
from run_duel.sandbox.docker import DockerSandbox  # noqa: E402

GAME = "connect-four"
LIMITS = Limits(move_timeout=5.0, init_timeout=30.0)


def worker(image: str, duels: int, matches: int, pin: bool) -> list[dict]:
    """Play ``duels`` duels one after the other, as one worker process does; return their JSON."""
    results = []
    for _ in range(duels):
        sandbox = DockerSandbox()
        try:
            spec = LaunchSpec(agent=image, labels={"duel": "bench-throughput"})
            results.append(play_duel(GAME, sandbox, spec, spec, matches=matches, limits=LIMITS, pin_cpus=pin))
        finally:
            sandbox.close()
    return results


def one_round(image: str, workers: int, duels: int, matches: int, pin: bool) -> tuple[float, int]:
    """Duels per minute of ``workers`` concurrent workers, and how many duels were pinned."""
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        batches = list(pool.map(lambda _: worker(image, duels, matches, pin), range(workers)))
    elapsed = time.perf_counter() - t0
    played = [duel for batch in batches for duel in batch]
    errors = sum(d["player_1_errors"] + d["player_2_errors"] + d["other_errors"] for d in played)
    if errors:
        raise RuntimeError(f"{errors} matches had errors")
    return len(played) / elapsed * 60, sum(d["cpus"] is not None for d in played)


def main() -> int:
    """Build the random player, run the rounds, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--duels", type=int, default=6, help="duels per worker per round")
    parser.add_argument("--matches", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    image = build_random_image()
    rates: dict[bool, list[float]] = {True: [], False: []}
    pinned: dict[bool, int] = {True: 0, False: 0}
    for _ in range(args.rounds):
        for pin in (True, False):
            rate, count = one_round(image, args.workers, args.duels, args.matches, pin)
            rates[pin].append(rate)
            pinned[pin] += count
    total = args.rounds * args.workers * args.duels
    print(
        f"{args.workers} concurrent workers x {args.duels} {args.matches}-match {GAME} duels per round, "
        f"{args.rounds} rounds (duels per minute, median [all rounds])"
    )
    for pin, label in ((True, "one core per duel"), (False, "unpinned")):
        runs = ", ".join(f"{r:.0f}" for r in rates[pin])
        print(f"  {label:18s} {statistics.median(rates[pin]):6.0f}  [{runs}]  pinned {pinned[pin]}/{total}")
    ratio = statistics.median(rates[True]) / statistics.median(rates[False])
    print(f"  ratio one core per duel / unpinned: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
