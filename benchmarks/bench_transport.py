"""Per-move round trip of one small message through each transport, median µs, with ratios.

    .venv/bin/python benchmarks/bench_transport.py [--moves 3000]

Transports, all answering with the random example player except the floor:
  pipe floor          a trivial echo process over a pipe (nothing cheaper is possible between processes)
  local sandbox       our harness as a subprocess (bubblewrap when installed)
  docker unix socket  our harness in a --network none container, socket in a bind-mounted folder
  ..., same core      the same with both ends pinned to one core, as a duel runs (``run_duel.cpu_slots``;
                      the docker row is OURS)
  docker attach       our harness on stdin/stdout through the Docker engine's attach stream
  http keep-alive     the old design with one kept-alive connection (its most favourable variant)
  http per move       a stdlib HTTP server per container behind a published port, a new connection per move
  docker warm         our harness's fresh agent process in a warm container (``docker_warm``), same core
  rl-arena            the transport as rl-arena ran it: Flask under gunicorn in the container, reached at
                      its address, one ``requests.post`` per move (``http_baseline/rl_arena.py``)
The message is a Connect Four ``step`` (6x7 board, 7 legal actions), about 150 bytes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_images import build_random_image  # noqa: E402
from http_baseline import rl_arena  # noqa: E402
from http_baseline.baseline import AttachPlayer, HttpPlayer, build_http_image  # noqa: E402

from run_duel.channel import Channel  # noqa: E402
from run_duel.sandbox.base import LaunchSpec, Limits  # noqa: E402
from run_duel.sandbox.docker import DockerSandbox  # noqa: E402
from run_duel.sandbox.docker_warm import ReusePolicy  # noqa: E402
from run_duel.sandbox.local import LocalSandbox  # noqa: E402

RANDOM = REPO / "example_players" / "random"
MESSAGE = {
    "type": "step",
    "state": [[0] * 7 for _ in range(6)],
    "valid_actions": list(range(7)),
    "reward": 0.0,
}
ECHO = (
    'import os, sys\nfor line in sys.stdin.buffer:\n    os.write(1, b\'{"type":"action","action":3}\\n\')\n'
)
LIMITS = Limits(move_timeout=5.0, init_timeout=30.0)
WARMUP = 200
OURS = "docker unix socket, same core (ours)"


def median_us(ask, moves: int) -> float:
    """Median µs of ``ask()`` (one send + one reply) over ``moves`` calls after a warm-up."""
    for _ in range(WARMUP):
        ask()
    times = []
    perf = time.perf_counter
    for _ in range(moves):
        t = perf()
        ask()
        times.append(perf() - t)
    return statistics.median(times) * 1e6


@contextlib.contextmanager
def same_core(enabled: bool):
    """Pin the calling thread to one core (the last usable one) while measuring; yields the core set."""
    if not enabled:
        yield None
        return
    saved = os.sched_getaffinity(0)
    cpus = {max(saved)}
    os.sched_setaffinity(0, cpus)
    try:
        yield frozenset(cpus)
    finally:
        os.sched_setaffinity(0, saved)


def channel_asker(channel: Channel):
    def ask() -> None:
        channel.send(MESSAGE, 5)
        channel.recv(5, 65536)

    return ask


def bench_pipe(moves: int, pinned: bool = False) -> float:
    proc = subprocess.Popen([sys.executable, "-c", ECHO], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    channel = Channel(proc.stdout.fileno(), proc.stdin.fileno(), close_fds=())
    try:
        with same_core(pinned) as cpus:
            if cpus:
                os.sched_setaffinity(proc.pid, cpus)
            return median_us(channel_asker(channel), moves)
    finally:
        proc.kill()
        proc.wait()


def bench_sandbox(sandbox, agent: str, moves: int, pinned: bool = False) -> float:
    proc = sandbox.launch(LaunchSpec(agent=agent, limits=LIMITS))
    try:
        assert proc.channel.recv(30, 65536)["type"] == "ready"
        proc.channel.send({"type": "start", "state": MESSAGE["state"], "valid_actions": [0]}, 5)
        proc.channel.recv(5, 65536)
        with same_core(pinned) as cpus:
            if cpus and not proc.pin_cpus(cpus):
                raise RuntimeError("the sandbox could not pin the agent")
            return median_us(channel_asker(proc.channel), moves)
    finally:
        proc.kill()


def bench_attach(image: str, moves: int) -> float:
    player = AttachPlayer(image)
    try:
        player.send({"type": "start", "state": MESSAGE["state"], "valid_actions": [0]})
        player.recv()

        def ask() -> None:
            player.send(MESSAGE)
            player.recv()

        return median_us(ask, moves)
    finally:
        player.kill()


def bench_http(image: str, moves: int, keep_alive: bool) -> float:
    player = HttpPlayer(image, keep_alive=keep_alive)
    try:
        player.ask({"type": "start", "state": MESSAGE["state"], "valid_actions": [0]})
        return median_us(lambda: player.ask(MESSAGE), moves)
    finally:
        player.kill()


def bench_rl_arena(image: str, moves: int) -> float:
    """The rl-arena transport (Flask under gunicorn at the container's address, requests.post per move)."""
    player = rl_arena.RemotePlayer(image, cpus=LIMITS.cpus, memory_mb=LIMITS.memory_mb)
    try:
        player.ask({"type": "start", "state": MESSAGE["state"], "valid_actions": [0]})
        return median_us(lambda: player.ask(MESSAGE), moves)
    finally:
        player.kill()


def main() -> int:
    """Measure every transport and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--moves", type=int, default=3000)
    args = parser.parse_args()

    image = build_random_image()
    http_image = build_http_image(image)
    rl_arena_image, _ = rl_arena.build_image(image)

    results: dict[str, float] = {}
    results["pipe floor"] = bench_pipe(args.moves)
    results["pipe floor, same core"] = bench_pipe(args.moves, pinned=True)
    local = LocalSandbox()
    results["local sandbox"] = bench_sandbox(local, str(RANDOM), args.moves)
    results["local sandbox, same core"] = bench_sandbox(local, str(RANDOM), args.moves, pinned=True)
    local.close()
    docker_sandbox = DockerSandbox(reuse=ReusePolicy(enabled=False))
    results["docker unix socket"] = bench_sandbox(docker_sandbox, image, args.moves)
    results[OURS] = bench_sandbox(docker_sandbox, image, args.moves, pinned=True)
    docker_sandbox.close()
    warm = DockerSandbox(reuse=ReusePolicy(enabled=True))
    results["docker warm container, same core"] = bench_sandbox(warm, image, args.moves, pinned=True)
    warm.close()
    warm.pool.close()
    results["docker attach stdin/stdout"] = bench_attach(image, args.moves)
    results["http keep-alive"] = bench_http(http_image, args.moves, keep_alive=True)
    results["http per move (old design)"] = bench_http(http_image, args.moves, keep_alive=False)
    results["rl-arena: gunicorn + Flask, requests.post"] = bench_rl_arena(rl_arena_image, args.moves)

    floor = results["pipe floor"]
    ours = results[OURS]
    print(f"median round trip of one Connect Four step message ({args.moves} moves each)")
    print(f"{'transport':42s} {'µs/move':>9s} {'x floor':>8s} {'x ours':>8s}")
    for name, value in results.items():
        print(f"{name:42s} {value:9.1f} {value / floor:8.2f} {value / ours:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
