"""What the sandbox costs: a 100-match Connect Four duel, random vs random, and the per-move round trip.

    .venv/bin/python benchmarks/bench_duel_local.py [--matches 100] [--moves 2000]

Prints wall times of the same duel played (1) by direct calls (the game loop and the two Players in
this process: no protocol at all), (2) through the referee with the in-process sandbox: the harness's
message handler called directly on the referee's bytes (``inprocess``: the protocol's encoding without
transport), then with the harness in a thread over a socketpair (``inprocess``, ``threaded=True``: the
protocol without processes), (3) through the local sandbox without and with bubblewrap; and the median
round trip of one Connect Four ``step`` message: to a trivial echo process over a pipe (the floor)
versus to the harness in the local sandbox.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from environments import get_game  # noqa: E402
from run_duel.channel import Channel  # noqa: E402
from run_duel.referee import play_duel  # noqa: E402
from run_duel.sandbox.base import LaunchSpec, Limits  # noqa: E402
from run_duel.sandbox.inprocess import InProcessSandbox  # noqa: E402
from run_duel.sandbox.local import LocalSandbox, bwrap_path  # noqa: E402

RANDOM = REPO / "example_players" / "random"
GAME = "connect-four"
LIMITS = Limits(move_timeout=5.0, init_timeout=30.0)
MOVE_TIMES: list[float] = []
ECHO = "import os, sys\nfor line in sys.stdin.buffer:\n    os.write(1, line)\n"


def load_random_player() -> object:
    spec = importlib.util.spec_from_file_location("bench_random_player", RANDOM / "player.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Player(False)


def direct_duel(matches: int) -> float:
    """The duel without any protocol: the game loop calls both Players directly."""
    game = get_game(GAME)
    players = (load_random_player(), load_random_player())
    t0 = time.perf_counter()
    for index in range(matches):
        seats = (players[index % 2], players[1 - index % 2])
        started = [False, False]
        state = game.initial_state()
        while not game.is_over(state):
            seat = game.to_move(state)
            obs = np.asarray(game.observation(state, seat).tolist())
            legal = np.asarray(game.legal_actions(state), dtype=np.int64)
            if started[seat]:
                action = seats[seat].step(obs, legal, 0.0)
            else:
                started[seat] = True
                action = seats[seat].start(obs, legal)
            state = game.apply(state, int(action))
        rewards = game.rewards(state)
        for seat in (0, 1):
            seats[seat].end(np.asarray(game.observation(state, seat).tolist()), rewards[seat])
    return time.perf_counter() - t0


def sandbox_duel(sandbox, matches: int) -> tuple[float, int]:
    t0 = time.perf_counter()
    result = play_duel(
        GAME, sandbox, LaunchSpec(str(RANDOM)), LaunchSpec(str(RANDOM)), matches=matches, limits=LIMITS
    )
    elapsed = time.perf_counter() - t0
    MOVE_TIMES.extend(t for m in result["matches"] for t in m["move_times"])
    bad = result["player_1_errors"] + result["player_2_errors"] + result["other_errors"]
    assert bad == 0, [m["error_msg"] for m in result["matches"] if m["error_kind"]][:1]
    return elapsed, sum(m["num_moves"] for m in result["matches"])


def step_message() -> dict:
    game = get_game(GAME)
    state = game.initial_state()
    return {
        "type": "step",
        "state": game.observation(state, 0).tolist(),
        "valid_actions": game.legal_actions(state),
        "reward": 0.0,
    }


def round_trips(channel: Channel, message: dict, n: int) -> list[float]:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        channel.send(message, 5.0)
        channel.recv(5.0, 1 << 20)
        times.append(time.perf_counter() - t)
    return times


def echo_round_trip(n: int) -> float:
    proc = subprocess.Popen([sys.executable, "-c", ECHO], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    channel = Channel(proc.stdout.fileno(), proc.stdin.fileno(), close_fds=())
    message = step_message()
    round_trips(channel, message, 200)  # warm up
    median = statistics.median(round_trips(channel, message, n))
    proc.stdin.close()
    proc.wait()
    return median


def harness_round_trip(sandbox, n: int) -> float:
    proc = sandbox.launch(LaunchSpec(str(RANDOM), limits=LIMITS))
    try:
        assert proc.channel.recv(30, 65536)["type"] == "ready"
        message = step_message()
        proc.channel.send({**message, "type": "start"}, 5.0)
        proc.channel.recv(5, 65536)
        round_trips(proc.channel, message, 200)
        return statistics.median(round_trips(proc.channel, message, n))
    finally:
        proc.kill()


def startup_time(sandbox, runs: int = 3) -> float:
    """Median seconds from launch to ``ready`` (interpreter start, numpy import, Player built)."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        proc = sandbox.launch(LaunchSpec(str(RANDOM), limits=LIMITS))
        try:
            assert proc.channel.recv(30, 65536)["type"] == "ready"
            times.append(time.perf_counter() - t)
        finally:
            proc.kill()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--matches", type=int, default=100)
    parser.add_argument("--moves", type=int, default=2000, help="round trips per median")
    args = parser.parse_args()

    direct = direct_duel(args.matches)
    inproc, moves = sandbox_duel(InProcessSandbox(), args.matches)
    threaded, _ = sandbox_duel(InProcessSandbox(threaded=True), args.matches)
    rows = [
        ("direct calls (no protocol)", direct),
        ("referee + harness, direct (inprocess)", inproc),
        ("referee + harness thread (inprocess)", threaded),
    ]
    move_stats = []
    variants = [("local sandbox, plain subprocess", False)] + (
        [("local sandbox, bubblewrap", True)] if bwrap_path() else []
    )
    for name, use_bwrap in variants:
        MOVE_TIMES.clear()
        seconds, _ = sandbox_duel(LocalSandbox(use_bwrap=use_bwrap), args.matches)
        rows.append((name, seconds))
        move_stats.append((name, statistics.median(MOVE_TIMES), statistics.mean(MOVE_TIMES)))
    print(f"{args.matches}-match {GAME} duel, random vs random ({moves} moves):")
    for name, seconds in rows:
        print(
            f"  {name:40s} {seconds:7.3f} s  {seconds / moves * 1e6:7.1f} us/move"
            f"  x{seconds / inproc:5.2f} vs inprocess  x{seconds / direct:6.2f} vs direct"
        )

    print("per-move send -> reply time inside those duels (move_times):")
    for name, median, mean in move_stats:
        print(f"  {name:40s} median {median * 1e6:7.1f} us  mean {mean * 1e6:7.1f} us")
    floor = echo_round_trip(args.moves)
    print(f"median round trip of one {GAME} step message ({args.moves} samples):")
    print(f"  pipe to a trivial echo process (floor)   {floor * 1e6:7.1f} us")
    summary = {
        "duel_s": {name: round(seconds, 4) for name, seconds in rows},
        "floor_us": round(floor * 1e6, 1),
    }
    for name, use_bwrap in variants:
        rt = harness_round_trip(LocalSandbox(use_bwrap=use_bwrap), args.moves)
        print(f"  {name + ' harness':40s} {rt * 1e6:7.1f} us  (x{rt / floor:.2f} the floor)")
        summary[f"{name} round_trip_us"] = round(rt * 1e6, 1)
    print("launch -> ready of one agent (median of 3):")
    for name, use_bwrap in variants:
        print(f"  {name:40s} {startup_time(LocalSandbox(use_bwrap=use_bwrap)) * 1e3:7.1f} ms")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
