"""How many fewer matches duplicate play needs than plain play to order a Leduc Hold'em league.

The league: graded agents, each playing the CFR+ strategy of ``example_players/leduc_cfr`` with
probability ``w`` at every decision and a uniformly random legal action otherwise (``w`` = 0, 0.25, 0.5,
0.75, 1: a higher ``w`` is stronger, which the pool of results confirms). Every pair of agents plays
with the arena's real rules (``environments``):

* **plain**: every match dealt from a fresh seed, the seats alternating;
* **duplicate**: matches in pairs dealt from the same seed with the seats swapped (what the referee does
  for games with chance).

A pool of results is played once per pair and mode; then, for ``n`` matches per pair, ``--repeats``
leagues are drawn from the pool (without replacement within a league) and ordered by total match score
(win 1, draw 0.5: a round-robin edition's ranking) and, with ``--trueskill`` (pure-Python updates:
minutes), by TrueSkill μ after rating the league's matches in a random order (``tau`` 0, as the
platform rates). The figure is the share of the league's pairs of agents ordered as their strength, and
the matches per pair each mode needs to reach 90 % and 95 % of pairs.

    .venv/bin/python benchmarks/bench_duplicate_leduc.py [--pool 2000] [--repeats 100] [--trueskill]

Prints the load average before and after (the machine is shared); the numbers are counts of matches,
not times, so load does not change them.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import time
from pathlib import Path

import trueskill

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from environments import get_game  # noqa: E402

GAME = get_game("leduc-holdem")
TABLE = json.loads((REPO / "example_players" / "leduc_cfr" / "policy.json").read_text())
WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
SIZES = (4, 8, 16, 24, 32, 48, 64, 96, 128, 256)


def info_key(obs: list[int]) -> str:
    """The CFR table's key of a Leduc observation (as ``example_players/leduc_cfr/player.py``)."""
    public = "-" if obs[1] < 0 else str(obs[1])
    rounds = ["".join(str(a) for a in obs[start : start + 4] if a >= 0) for start in (5, 9)]
    return f"{obs[0]}|{public}|{rounds[0]}|{rounds[1]}"


def act(weight: float, state: dict, rng: random.Random) -> int:
    """The graded agent's action: the CFR strategy with probability ``weight``, else uniform."""
    legal = GAME.legal_actions(state)
    if rng.random() >= weight:
        return rng.choice(legal)
    probs = TABLE[info_key(GAME.observation(state, state["to_move"]).tolist())]
    return rng.choices(legal, weights=[probs[a] for a in legal])[0]


def play(weights: tuple[float, float], seed: int, rng: random.Random) -> float:
    """Score (1 win, 0.5 draw, 0 loss) of the agent in seat 0 of a match dealt from ``seed``."""
    state = GAME.initial_state(seed)
    while not GAME.is_over(state):
        state = GAME.apply(state, act(weights[state["to_move"]], state, rng))
    winner = GAME.winner(state)
    return 0.5 if winner is None else (1.0 if winner == 0 else 0.0)


def pool(a: int, b: int, size: int, duplicate: bool, rng: random.Random) -> list[tuple[float, float]]:
    """``size`` units of play between agents ``a`` and ``b``: (a's score, b's score) per match, in
    consecutive duplicate pairs (same seed, seats swapped) or independent deals."""
    results = []
    seed = 0
    for i in range(size):
        if not duplicate or i % 2 == 0:
            seed = rng.randrange(2**31)
        a_first = i % 2 == 0
        seats = (WEIGHTS[a], WEIGHTS[b]) if a_first else (WEIGHTS[b], WEIGHTS[a])
        first_score = play(seats, seed, rng)
        a_score = first_score if a_first else 1.0 - first_score
        results.append((a_score, 1.0 - a_score))
    return results


def sample_league(pools: dict, n: int, duplicate: bool, rng: random.Random) -> list[tuple[int, int, float]]:
    """``n`` matches per pair drawn from the pools (whole duplicate pairs in duplicate mode)."""
    matches = []
    for (a, b), results in pools.items():
        if duplicate:
            pairs = rng.sample(range(len(results) // 2), n // 2)
            picked = [results[2 * p + k] for p in pairs for k in (0, 1)]
        else:
            picked = rng.sample(results, n)
        matches.extend((a, b, score_a) for score_a, _ in picked)
    return matches


def variance(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / (len(values) - 1)


def pair_means(results: list[tuple[float, float]]) -> list[float]:
    """b's mean score over each duplicate pair (same deal, seats swapped)."""
    return [(results[i][1] + results[i + 1][1]) / 2 for i in range(0, len(results) - 1, 2)]


def share_ordered(strength: list[float]) -> float:
    """Share of pairs of agents whose estimated strengths follow the true order (ties count half)."""
    pairs = list(itertools.combinations(range(len(strength)), 2))
    good = sum(
        1.0 if strength[j] > strength[i] else 0.5 if strength[j] == strength[i] else 0.0 for i, j in pairs
    )
    return good / len(pairs)


def by_score(matches: list[tuple[int, int, float]]) -> list[float]:
    totals = [0.0] * len(WEIGHTS)
    for a, b, score_a in matches:
        totals[a] += score_a
        totals[b] += 1.0 - score_a
    return totals


def by_trueskill(matches: list[tuple[int, int, float]], rng: random.Random) -> list[float]:
    env = trueskill.TrueSkill(tau=0.0, draw_probability=0.05)
    ratings = [env.create_rating() for _ in WEIGHTS]
    order = list(matches)
    rng.shuffle(order)
    for a, b, score_a in order:
        if score_a == 0.5:
            ratings[a], ratings[b] = env.rate_1vs1(ratings[a], ratings[b], drawn=True)
        elif score_a == 1.0:
            ratings[a], ratings[b] = env.rate_1vs1(ratings[a], ratings[b])
        else:
            ratings[b], ratings[a] = env.rate_1vs1(ratings[b], ratings[a])
    return [r.mu for r in ratings]


def needed(curve: dict[int, float], target: float) -> str:
    """The smallest size whose share reaches ``target`` (``>`` the largest when none does)."""
    for n in SIZES:
        if curve[n] >= target:
            return str(n)
    return f">{SIZES[-1]}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pool", type=int, default=2000, help="matches per pair and mode played once (even)")
    parser.add_argument("--repeats", type=int, default=100, help="leagues drawn per size")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--trueskill", action="store_true", help="also order by TrueSkill μ (slow)")
    args = parser.parse_args()
    methods = ("score", "trueskill") if args.trueskill else ("score",)
    if max(SIZES) > args.pool:
        parser.error(f"--pool must be at least {max(SIZES)}")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    rng = random.Random(args.seed)
    t0 = time.perf_counter()
    pools = {
        mode: {
            (a, b): pool(a, b, args.pool, mode == "duplicate", rng)
            for a, b in itertools.combinations(range(len(WEIGHTS)), 2)
        }
        for mode in ("plain", "duplicate")
    }
    played = 2 * args.pool * len(pools["plain"])
    print(f"played {played} Leduc matches (10 hands each) in {time.perf_counter() - t0:.0f} s")
    print("\nstronger vs weaker: mean score plain / duplicate, and the variance ratio (how many times more")
    print("matches plain play needs than duplicate play to measure the pair's mean score as precisely):")
    ratios = []
    for (a, b), results in pools["plain"].items():
        dup = pools["duplicate"][(a, b)]
        mean = sum(s[1] for s in results) / len(results)
        mean_dup = sum(s[1] for s in dup) / len(dup)
        ratio = variance([s[1] for s in results]) / (2 * variance(pair_means(dup)))
        ratios.append(ratio)
        print(f"  w={WEIGHTS[b]:.2f} vs w={WEIGHTS[a]:.2f}: {mean:.3f} / {mean_dup:.3f}   ratio {ratio:.2f}")
    print(f"  mean variance ratio: {sum(ratios) / len(ratios):.2f}")

    curves: dict[tuple[str, str], dict[int, float]] = {}
    for mode in ("plain", "duplicate"):
        for method in methods:
            curve = {}
            for n in SIZES:
                shares = []
                for _ in range(args.repeats):
                    league = sample_league(pools[mode], n, mode == "duplicate", rng)
                    strength = by_score(league) if method == "score" else by_trueskill(league, rng)
                    shares.append(share_ordered(strength))
                curve[n] = sum(shares) / len(shares)
            curves[(mode, method)] = curve

    print(
        f"\nshare of the {len(pools['plain'])} pairs of agents ordered correctly "
        f"({args.repeats} leagues a cell)"
    )
    header = "matches per pair | " + " | ".join(f"{mode} ({method})" for mode, method in curves)
    print(header)
    print("|".join(["---"] * (len(curves) + 1)))
    for n in SIZES:
        print(f"{n} | " + " | ".join(f"{curves[key][n]:.3f}" for key in curves))
    for method in methods:
        for target in (0.9, 0.95):
            plain = needed(curves[("plain", method)], target)
            dup = needed(curves[("duplicate", method)], target)
            print(
                f"matches per pair to order {target:.0%} of pairs by {method}: plain {plain}, duplicate {dup}"
            )
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
