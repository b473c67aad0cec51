"""A 100-match Connect Four duel, random vs random, in Docker: ours against the rl-arena transport, as ratios.

    .venv/bin/python benchmarks/bench_duel_docker.py [--matches 100] [--repeat 3] [--launches 5]

ours, CLI:      ``python -m run_duel --sandbox docker --env connect-four ... --no-states --output FILE``
                as a user runs it: interpreter and imports, image check, both containers started, the
                full referee, both removed.
ours, cold:     ``run_duel.play_duel`` with the Docker sandbox in this process, as a duel task runs it
                with ``DUEL_SANDBOX_REUSE=off``: the sandbox, both seats' fresh containers (no network),
                the full referee (every reply validated, states recorded), closing and removal.
ours, warm:     the same with reuse on, on a worker that already played that revision: a fresh agent
                process forked in each seat's warm container (``run_duel/sandbox/docker_warm.py``).
rl-arena:       the baseline (``http_baseline/rl_arena.py``): the transport as rl-arena's users ran it — a
                Flask app under gunicorn in each player's container, reached at the container's address,
                one ``requests.post`` (a new connection) per move, the game's CPU and memory limits (ours
                too), health polled every 0.5 s after start, both containers started concurrently and
                removed at the end; driven by a minimal referee loop (legality only: lighter than ours).
Runs alternate between the designs; medians over ``--repeat`` runs; the machine's load average is printed
before and after (it is shared: compare designs of the same run). Before the duels, ``--launches`` single
cold launches are timed phase by phase (create, start, harness connected, ``ready``, exit, removal).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_images import build_random_image  # noqa: E402
from http_baseline import rl_arena  # noqa: E402
from http_baseline.baseline import play_http_duel  # noqa: E402

from environments import get_game, get_info  # noqa: E402
from run_duel.referee import play_duel  # noqa: E402
from run_duel.sandbox.base import LaunchSpec, Limits  # noqa: E402
from run_duel.sandbox.docker import DockerSandbox  # noqa: E402
from run_duel.sandbox.docker_client import get_client  # noqa: E402
from run_duel.sandbox.docker_warm import ReusePolicy  # noqa: E402

GAME = "connect-four"
INFO = get_info(GAME)
#: The game's CPU and memory limits (the baseline's containers get the same), generous deadlines (the
#: machine is shared and loaded: a timeout would stop the bench).
LIMITS = Limits(cpus=INFO.cpu_limit, memory_mb=INFO.memory_limit_mb, move_timeout=5.0, init_timeout=30.0)


def ours(image: str, matches: int, sandbox: DockerSandbox | None = None) -> tuple[float, dict]:
    """Wall time of the duel as a duel task runs it: sandbox, launches, referee, closing (and, cold, the
    removal of both containers). With ``sandbox`` (a warm one), that sandbox is used and kept."""
    t0 = time.perf_counter()
    own = sandbox is None
    sandbox = DockerSandbox(reuse=ReusePolicy(enabled=False)) if own else sandbox
    try:
        spec = LaunchSpec(agent=image, labels={"duel": "bench"})
        duel = play_duel(GAME, sandbox, spec, spec, matches=matches, limits=LIMITS)
    finally:
        if own:
            sandbox.close()
    elapsed = time.perf_counter() - t0
    errors = duel["player_1_errors"] + duel["player_2_errors"] + duel["other_errors"]
    if errors:
        raise RuntimeError(f"the duel had errors: {duel['matches'][0]['error_msg']}")
    return elapsed, duel


def ours_cli(image: str, matches: int) -> float:
    """Wall time of ``python -m run_duel --sandbox docker`` (no states, JSON to a file)."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "run_duel", "--env", GAME, "--player-1", image, "--player-2", image]
        cmd += [
            "--matches",
            str(matches),
            "--sandbox",
            "docker",
            "--no-states",
            "--output",
            f"{tmp}/duel.json",
        ]
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=REPO, check=True, stderr=subprocess.DEVNULL)
        return time.perf_counter() - t0


def old(http_image: str, matches: int) -> tuple[float, dict]:
    """Wall time of the same duel with the rl-arena transport (both containers started and removed)."""
    game = get_game(GAME)
    t0 = time.perf_counter()

    def start(image: str) -> rl_arena.RemotePlayer:
        return rl_arena.RemotePlayer(image, cpus=LIMITS.cpus, memory_mb=LIMITS.memory_mb)

    with ThreadPoolExecutor(max_workers=2) as pool:  # both containers start concurrently, as ours do
        first, second = pool.map(start, (http_image, http_image))
    players = (first, second)
    try:
        tally = play_http_duel(game, players, matches)
    finally:
        for player in players:
            player.kill()
    elapsed = time.perf_counter() - t0
    if tally["errors"]:
        raise RuntimeError("the HTTP duel had errors")
    return elapsed, tally


class _Timed:
    """Wrap some engine calls of the shared client to time them (restored by ``restore``)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.api = get_client().api
        self.names = names
        self.times: dict[str, list[float]] = {name: [] for name in names}
        for name in names:
            setattr(self.api, name, self._wrap(name, getattr(self.api, name)))

    def _wrap(self, name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                self.times[name].append(time.perf_counter() - t)

        return timed

    def restore(self) -> None:
        for name in self.names:
            delattr(self.api, name)


def launch_phases(image: str, launches: int) -> dict[str, float]:
    """Median milliseconds of each phase of one agent's life in our sandbox, over ``launches`` launches."""
    timed = _Timed(("create_container", "start", "remove_container"))
    phases: dict[str, list[float]] = {"launch": [], "ready": [], "exit": [], "kill": []}
    sandbox = DockerSandbox(reuse=ReusePolicy(enabled=False))
    try:
        for _ in range(launches):
            t = time.perf_counter()
            proc = sandbox.launch(LaunchSpec(agent=image, limits=LIMITS, labels={"duel": "bench"}))
            phases["launch"].append(time.perf_counter() - t)
            t = time.perf_counter()
            assert proc.channel.recv(30, 4096) == {"type": "ready"}
            phases["ready"].append(time.perf_counter() - t)
            t = time.perf_counter()
            proc.channel.send({"type": "close"}, 1)
            proc.wait_exit(10)
            phases["exit"].append(time.perf_counter() - t)
            t = time.perf_counter()
            proc.stderr_log()
            proc.kill()
            phases["kill"].append(time.perf_counter() - t)
    finally:
        sandbox.close()
        timed.restore()
    ms = {name: statistics.median(values) * 1e3 for name, values in phases.items()}
    ms["create"] = statistics.median(timed.times["create_container"]) * 1e3
    ms["start"] = statistics.median(timed.times["start"]) * 1e3
    ms["remove"] = statistics.median(timed.times["remove_container"]) * 1e3
    ms["connect"] = ms["launch"] - ms["create"] - ms["start"]
    return ms


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    """Time the launch phases, run the designs ``--repeat`` times, print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--matches", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--launches", type=int, default=5)
    parser.add_argument("--image", help="agent image (default: build example_players/random)")
    args = parser.parse_args()
    image = args.image or build_random_image()
    baseline_image, versions = rl_arena.build_image(image)
    print(f"load average before: {load()}", flush=True)

    ms = launch_phases(image, args.launches)
    print(f"one agent's life in a fresh container, median of {args.launches} launches (ms):")
    print(
        f"  create {ms['create']:.0f} + start {ms['start']:.0f} + harness connected {ms['connect']:.0f}"
        f" = launch {ms['launch']:.0f}; then ready (numpy + player.py) {ms['ready']:.0f};"
        f" exit after close {ms['exit']:.0f}; log + removal {ms['kill']:.0f} (remove call {ms['remove']:.0f})"
    )

    warm = DockerSandbox(reuse=ReusePolicy(enabled=True))
    ours(image, 1, warm)  # the worker has played this revision before: its containers are warm
    times: dict[str, list[float]] = {"cli": [], "cold": [], "warm": [], "rl-arena": []}
    phases: dict[str, list[float]] = {"start": [], "play": [], "close": []}
    try:
        for _ in range(args.repeat):
            times["cli"].append(ours_cli(image, args.matches))
            elapsed, duel = ours(image, args.matches)
            times["cold"].append(elapsed)
            elapsed, warm_duel = ours(image, args.matches, warm)
            times["warm"].append(elapsed)
            for name, value in warm_duel["phases_s"].items():
                phases[name].append(value)
            elapsed, tally = old(baseline_image, args.matches)
            times["rl-arena"].append(elapsed)
    finally:
        warm.close()
        warm.pool.close()
    moves = sum(m["num_moves"] for m in duel["matches"])
    move_times = [t for d in (duel, warm_duel) for m in d["matches"] for t in m["move_times"]]
    med = {name: statistics.median(values) for name, values in times.items()}
    runs = {name: ", ".join(f"{v:.2f}" for v in values) for name, values in times.items()}
    base = med["rl-arena"]
    print(f"{args.matches}-match {GAME} duel, random vs random, median of {args.repeat} runs (all runs in s)")
    print(
        f"  rl-arena (Flask under gunicorn; {versions}): {base:.2f} s [{runs['rl-arena']}], "
        f"{tally['moves']} moves"
    )
    rows = (
        ("cli", "ours, CLI (python -m run_duel --sandbox docker)"),
        ("cold", "ours, in-process, fresh containers"),
        ("warm", "ours, in-process, warm containers"),
    )
    for key, label in rows:
        print(f"  {label:50s} {med[key]:6.2f} s [{runs[key]}]  {base / med[key]:5.1f}x faster")
    print(
        f"  {moves} moves in the last cold duel; "
        f"send->reply median {statistics.median(move_times) * 1e6:.0f} µs;"
        " warm duel: " + ", ".join(f"{name} {statistics.median(v):.3f} s" for name, v in phases.items())
    )
    print(f"load average after: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
