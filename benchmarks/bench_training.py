"""Win rate per CPU-minute of each Connect Four training example: each trainer runs in its own process with
the same budget of its own CPU time, then the network it exported (greedy, no tactical safety) plays the
arena's rules against ``random`` and against ``example_players/minimax`` at depth 2 (10 ms a move).

    .venv/bin/python benchmarks/bench_training.py --cpu-minutes 5            # every example, one at a time
    .venv/bin/python benchmarks/bench_training.py --cpu-minutes 5 --only sb3 --jobs 2

Examples: ``numpy`` (example_players/trained_connect_four, PPO in numpy, in-process league), ``sb3``
(example_players/train_sb3_connect_four, MaskablePPO on torch against the league: the random example in the
local sandbox, minimax depth 2 in process, its own snapshots) and ``rllib``
(example_players/train_rllib_connect_four, RLlib PPO, the same league, sampling in the driver). The budget
is the trainer process's CPU time (``time.process_time``: all its threads; not the sandboxed opponents'
processes nor Ray's daemons, reported apart as children CPU), so a loaded machine slows the wall clock, not
the budget. Score: win 1, draw 0.5, loss 0,
seats alternating; against the deterministic minimax the first ``--opening`` plies are random so that
games differ. The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from environments import get_game  # noqa: E402

EXAMPLES = {
    "numpy": ("example_players/trained_connect_four", ["--eval-games", "2", "--minutes", "100000"]),
    "sb3": ("example_players/train_sb3_connect_four", []),
    "rllib": ("example_players/train_rllib_connect_four", []),
}


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def network_policy(example: str, folder: Path):
    """The exported network of ``folder`` as ``policy(board, legal) -> column`` (greedy, onnxruntime)."""
    player = _load(f"_bench_{example}_player", REPO / EXAMPLES[example][0] / "player.py")
    policy = player.load_policy(str(folder))

    def act(board: np.ndarray, legal: list[int]) -> int:
        logits = policy.logits(player.planes(board)[None])[0]
        return max(legal, key=lambda col: logits[col])

    return act


def score(policy, opponent, games: int, opening: int, seed: int) -> float:
    """Mean score of ``policy`` over ``games`` games on the arena's Connect Four rules, seats alternating."""
    game = get_game("connect-four")
    rng = random.Random(seed)
    total = 0.0
    for g in range(games):
        seat = g % 2
        state = game.initial_state(seed + g)
        ply = 0
        while not game.is_over(state):
            legal = game.legal_actions(state)
            mover = game.to_move(state)
            board = np.asarray(game.observation(state, mover))
            if ply < opening:
                action = rng.choice(legal)
            elif mover == seat:
                action = policy(board, legal)
            else:
                action = opponent(board, legal)
            state = game.apply(state, action)
            ply += 1
        winner = game.winner(state)
        total += 0.5 if winner is None else float(winner == seat)
    return total / games


def baselines(seed: int):
    engine = _load("_bench_minimax", REPO / "example_players" / "minimax" / "connect_four_ai.py")
    minimax = engine.ConnectFourAI(time_budget=0.01, max_depth=2)
    rng = random.Random(seed)
    return {
        "random": lambda board, legal: rng.choice(legal),
        "minimax-d2": lambda board, legal: int(minimax.choose(board.astype(np.int64), legal)),
    }


def run_example(example: str, cpu_minutes: float, out: Path, seed: int) -> subprocess.Popen:
    folder, extra = EXAMPLES[example]
    cmd = [
        sys.executable,
        str(REPO / folder / "train.py"),
        "--out",
        str(out),
        "--cpu-minutes",
        str(cpu_minutes),
    ]
    cmd += ["--seed", str(seed), *extra]
    log = open(out / "train.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cpu-minutes", type=float, default=5.0, help="training budget of each example")
    p.add_argument("--only", action="append", choices=sorted(EXAMPLES), help="these examples only")
    p.add_argument("--jobs", type=int, default=1, help="examples trained at the same time")
    p.add_argument("--games-random", type=int, default=200)
    p.add_argument("--games-minimax", type=int, default=100)
    p.add_argument("--opening", type=int, default=2, help="random plies opening each game vs minimax")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="keep the trained folders here (default: a temporary folder)")
    p.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = p.parse_args(argv)
    examples = args.only or list(EXAMPLES)
    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench-training-"))
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs")
    print(f"budget: {args.cpu_minutes} CPU-minutes of each trainer's process; folders under {root}")

    results: dict[str, dict] = {}
    pending = list(examples)
    running: dict[str, tuple[subprocess.Popen, float, Path]] = {}
    while pending or running:
        while pending and len(running) < args.jobs:
            name = pending.pop(0)
            out = root / name
            out.mkdir(parents=True, exist_ok=True)
            running[name] = (run_example(name, args.cpu_minutes, out, args.seed), time.monotonic(), out)
        for name, (proc, started, out) in list(running.items()):
            if proc.poll() is None:
                continue
            del running[name]
            wall = time.monotonic() - started
            if proc.returncode != 0:
                tail = (out / "train.log").read_text()[-2000:]
                raise SystemExit(f"{name} failed ({proc.returncode}):\n{tail}")
            report = json.loads((out / "training.json").read_text())
            results[name] = {
                "train_cpu_seconds": report.get("cpu_seconds", report.get("train_cpu_seconds")),
                "train_wall_seconds": round(wall, 1),
                "steps_or_games": report.get("steps") or report.get("games"),
            }
            print(f"{name}: trained in {wall:.0f} s wall, load {os.getloadavg()[0]:.2f}", flush=True)
        time.sleep(1)
    children_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    for name in examples:
        policy = network_policy(name, root / name)
        opponents = baselines(args.seed)
        results[name]["win_rate_vs_random"] = score(
            policy, opponents["random"], args.games_random, 0, args.seed
        )
        results[name]["win_rate_vs_minimax_d2"] = score(
            policy, opponents["minimax-d2"], args.games_minimax, args.opening, args.seed
        )
    load_after = os.getloadavg()
    print()
    print(
        f"{'example':<8} {'CPU s':>7} {'wall s':>7} {'steps/games':>12} {'vs random':>10} "
        f"{'vs minimax-d2':>14}"
    )
    for name in examples:
        r = results[name]
        print(
            f"{name:<8} {r['train_cpu_seconds']:>7} {r['train_wall_seconds']:>7} {r['steps_or_games']:>12} "
            f"{r['win_rate_vs_random']:>10.3f} {r['win_rate_vs_minimax_d2']:>14.3f}"
        )
    print(
        f"games: {args.games_random} vs random, {args.games_minimax} vs minimax-d2 "
        f"({args.opening} random plies)"
    )
    print(
        "all trainers' CPU (their sandboxed opponents included): "
        f"{children_cpu.ru_utime + children_cpu.ru_stime:.0f} s"
    )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in load_after)}")
    if args.json:
        print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
