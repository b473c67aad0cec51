"""Agents in every stack, measured: per language, start-to-ready and per-move overhead in the Docker sandbox;
and the trained Connect Four agent's per-move inference, ONNX Runtime against the numpy copy of its weights.

    .venv/bin/python benchmarks/bench_agent_stacks.py [--launches 7] [--moves 2000] [--inferences 2000]

Agents: the random example player of each language (``example_players/random``, ``random_cpp``,
``random_js``), built exactly as the builder builds submissions (cached by content).

start-to-ready  ``DockerSandbox.launch`` (create + start the container, the harness connects to the
                referee's socket) until the ``ready`` message: interpreter start-up and loading the player
                (a compiled C++ program has neither to do). Median and max of ``--launches`` launches.
per move        one ``step`` message (a Connect Four position) and its ``action`` reply over the socket,
                median over ``--moves`` after a warm-up: the harness's parsing and encoding plus the
                transport; the random player's own work is negligible.
inference       inside the trained agent's image (its installed onnxruntime and numpy), the player's
                ``_act`` on ``--inferences`` Connect Four positions from random play, safety off (the network
                decides every move), with the policy loaded through ONNX Runtime and then from model.npz
                with numpy; median µs per move. Both run in one container, one after the other.

The machine is shared: the load average is printed before and after, and every figure is compared with
the others of the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builder import build_submission  # noqa: E402
from run_duel.sandbox.base import LaunchSpec, Limits  # noqa: E402
from run_duel.sandbox.docker import DockerSandbox  # noqa: E402
from run_duel.sandbox.docker_client import get_client  # noqa: E402

EXAMPLES = REPO / "example_players"
AGENTS = {
    "Python": EXAMPLES / "random",
    "C++": EXAMPLES / "random_cpp",
    "JavaScript": EXAMPLES / "random_js",
}
TRAINED = EXAMPLES / "trained_connect_four"
LIMITS = Limits(move_timeout=5.0, init_timeout=30.0)
STATE = [[0] * 7 for _ in range(5)] + [[1, -1, 1, -1, 0, 0, 0]]
STEP = {"type": "step", "state": STATE, "valid_actions": list(range(7)), "reward": 0}
WARMUP = 200

#: Runs in the trained agent's image: per-move time of the player with each backend, as JSON.
INFERENCE = """
import json, statistics, sys, time
import numpy as np
N = int(sys.argv[1])
sys.path.insert(0, "/agent")
import player
rng = np.random.default_rng(0)
boards = []
for _ in range(N):
    board = np.zeros((6, 7), dtype=np.int8)
    for move in range(int(rng.integers(0, 20))):
        free = [c for c in range(7) if board[0, c] == 0]
        col = int(rng.choice(free))
        row = max(r for r in range(6) if board[r, col] == 0)
        board[row, col] = 1 if move % 2 == 0 else -1
    boards.append(board)
out = {}
for name, onnx in (("onnxruntime", True), ("numpy", False)):
    p = player.Player(safety=False)
    p.policy = player.load_policy("/agent", prefer_onnx=onnx)
    legal = np.arange(7)
    for board in boards[:200]:
        p._act(board, legal)
    times = []
    for board in boards:
        t = time.perf_counter()
        p._act(board, legal)
        times.append(time.perf_counter() - t)
    times.sort()
    out[name] = {"median_us": statistics.median(times) * 1e6, "p90_us": times[int(0.9 * len(times))] * 1e6}
import onnxruntime
out["versions"] = {"onnxruntime": onnxruntime.__version__, "numpy": np.__version__}
print("RESULT " + json.dumps(out))
"""


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def build(folder: Path, work: Path) -> str:
    archive = work / f"{folder.name}.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                zf.write(path, path.relative_to(folder).as_posix())
    started = time.monotonic()
    result = build_submission(archive, backend="docker", work_dir=work, registry=None)
    if not result.ok:
        raise SystemExit(f"building {folder.name} failed: {result.error}")
    how = "cached" if result.cached else f"built in {time.monotonic() - started:.1f} s"
    print(
        f"  {folder.name}: {result.agent_ref} ({how}, image {result.image_size_bytes / 1e6:.0f} MB)",
        flush=True,
    )
    return result.agent_ref


def start_to_ready(sandbox: DockerSandbox, image: str, launches: int) -> list[float]:
    times = []
    for _ in range(launches):
        started = time.perf_counter()
        proc = sandbox.launch(LaunchSpec(agent=image, limits=LIMITS))
        try:
            message = proc.channel.recv(30, 65536)
            times.append(time.perf_counter() - started)
            if message.get("type") != "ready":
                raise SystemExit(f"{image} did not get ready: {message}")
        finally:
            proc.kill()
    return times


def per_move(sandbox: DockerSandbox, image: str, moves: int) -> float:
    proc = sandbox.launch(LaunchSpec(agent=image, limits=LIMITS))
    try:
        assert proc.channel.recv(30, 65536)["type"] == "ready"
        proc.channel.send({"type": "start", "state": STATE, "valid_actions": list(range(7))}, 5)
        proc.channel.recv(5, 65536)
        perf = time.perf_counter
        times = []
        for i in range(WARMUP + moves):
            t = perf()
            proc.channel.send(STEP, 5)
            proc.channel.recv(5, 65536)
            if i >= WARMUP:
                times.append(perf() - t)
        return statistics.median(times) * 1e6
    finally:
        proc.kill()


def inference(image: str, positions: int) -> dict:
    output = get_client().containers.run(
        image,
        ["-c", INFERENCE, str(positions)],
        entrypoint=["python3"],
        network_mode="none",
        nano_cpus=1_000_000_000,
        remove=True,
    )
    line = next(ln for ln in output.decode().splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=7)
    parser.add_argument("--moves", type=int, default=2000)
    parser.add_argument("--inferences", type=int, default=2000)
    args = parser.parse_args()
    print(f"load average before: {load()} ({os.cpu_count()} CPUs)", flush=True)
    work = Path(tempfile.mkdtemp(prefix="bench-stacks-"))
    print("images:", flush=True)
    images = {language: build(folder, work) for language, folder in AGENTS.items()}
    trained = build(TRAINED, work)

    sandbox = DockerSandbox(runtime_dir=work / "runtime")
    rows = []
    try:
        for language, image in images.items():
            ready = start_to_ready(sandbox, image, args.launches)
            move = per_move(sandbox, image, args.moves)
            rows.append((language, statistics.median(ready) * 1e3, max(ready) * 1e3, move))
            print(f"  measured {language} (load {load()})", flush=True)
    finally:
        sandbox.close()
    print("\n| language | start-to-ready median (ms) | max (ms) | per move median (µs) |")
    print("|---|---|---|---|")
    for language, median, worst, move in rows:
        print(f"| {language} | {median:.0f} | {worst:.0f} | {move:.0f} |")

    result = inference(trained, args.inferences)
    onnx, numpy = result["onnxruntime"], result["numpy"]
    print(
        f"\ntrained Connect Four agent, {args.inferences} positions, one CPU, safety off "
        f"({result['versions']}):"
    )
    print("| policy | per move median (µs) | p90 (µs) |")
    print("|---|---|---|")
    print(f"| ONNX Runtime (model.onnx, shipped) | {onnx['median_us']:.0f} | {onnx['p90_us']:.0f} |")
    print(f"| numpy (model.npz) | {numpy['median_us']:.0f} | {numpy['p90_us']:.0f} |")
    print(f"ONNX Runtime / numpy: {onnx['median_us'] / numpy['median_us']:.2f}")
    print(f"\nload average after: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
