"""Speed of each game's rules, in-process: random playouts and the cost of each Game method.

Run: ``python benchmarks/bench_rules.py [--seconds 1.0] [slug ...]``. Prints a Markdown table:
playout moves per second (legal_actions + random choice + apply + is_over per move) and the cost in
microseconds of one call of apply, legal_actions, observation and validate_state on states from those
playouts.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from environments import Game, State, all_slugs, get_game


def playouts_for(
    game: Game, seconds: float, rng: random.Random, keep: int = 20_000
) -> tuple[list[tuple[State, int]], int, int, float]:
    """Random playouts for about ``seconds``.

    Returns the first ``keep`` (state, action) pairs (for per-call timings), the number of matches and of
    moves played, and the time taken.
    """
    pairs: list[tuple[State, int]] = []
    matches = moves = 0
    legal_actions, apply, is_over, choice = game.legal_actions, game.apply, game.is_over, rng.choice
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        state = game.initial_state()
        while not is_over(state):
            action = choice(legal_actions(state))
            if len(pairs) < keep:
                pairs.append((state, action))
            state = apply(state, action)
            moves += 1
        matches += 1
    return pairs, matches, moves, time.perf_counter() - start


def per_call_us(fn: Callable[[], None], calls: int, repeat: int = 3) -> float:
    """Microseconds per call, best of ``repeat`` runs of ``fn`` (which makes ``calls`` calls)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best / calls * 1e6


def _loop(fn: Callable[..., object], args: list[tuple]) -> Callable[[], None]:
    """A function calling ``fn(*a)`` for each ``a`` in ``args``, discarding results (no GC pressure)."""

    def run() -> None:
        for a in args:
            fn(*a)

    return run


def measure(slug: str, seconds: float) -> dict[str, float]:
    """One row of the table for ``slug``."""
    game = get_game(slug)
    sample, matches, moves, elapsed = playouts_for(game, seconds, random.Random(12345))
    states = [s for s, _ in sample]
    one_state = [(s,) for s in states]
    obs_args = [(s, 0) for s in states]
    return {
        "matches": matches,
        "moves_per_match": moves / matches,
        "moves_per_s": moves / elapsed,
        "apply_us": per_call_us(_loop(game.apply, sample), len(sample)),
        "legal_us": per_call_us(_loop(game.legal_actions, one_state), len(states)),
        "obs_us": per_call_us(_loop(game.observation, obs_args), len(states)),
        "validate_us": per_call_us(_loop(game.validate_state, one_state[:5_000]), len(one_state[:5_000])),
    }


def main(argv: list[str] | None = None) -> None:
    """Print the table for the given games (default: every registered game)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("slugs", nargs="*", help="games to measure (default: all)")
    parser.add_argument("--seconds", type=float, default=1.0, help="playout time per game (default 1.0)")
    args = parser.parse_args(argv)
    slugs = args.slugs or all_slugs()
    print(f"Random playouts, {args.seconds:g} s per game, Python {sys.version.split()[0]}\n")
    header = (
        "| game | matches | moves/match | playout moves/s | apply µs | legal_actions µs "
        "| observation µs | validate_state µs |"
    )
    print(header)
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for slug in slugs:
        r = measure(slug, args.seconds)
        print(
            f"| {slug} | {r['matches']:,} | {r['moves_per_match']:.1f} | {r['moves_per_s']:,.0f} "
            f"| {r['apply_us']:.1f} | {r['legal_us']:.1f} | {r['obs_us']:.1f} | {r['validate_us']:.1f} |"
        )


if __name__ == "__main__":
    main()
