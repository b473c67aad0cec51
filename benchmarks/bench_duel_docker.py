"""A 100-match Connect Four duel, random vs random, in Docker: our design versus the old one, as a ratio.

    .venv/bin/python benchmarks/bench_duel_docker.py [--matches 100] [--repeat 3] [--launches 7]

ours:  ``run_duel.play_duel`` with the Docker sandbox, exactly as a duel task runs it — the sandbox is
       created, both seats' containers are launched (fresh, --network none), the full referee plays every
       match (every reply validated, states recorded), the agents are closed and both containers removed
       (``DockerSandbox.close`` included). NDJSON over a bind-mounted Unix socket.
old:   the rl-arena design the issue names — one container per player running a **Flask** app (Flask's own
       server, ``app.run(threaded=True)``, request logging off), port published on 127.0.0.1, a POST with a
       new connection per move, driven by a minimal referee loop (legality check only, no state recording:
       lighter than ours); its two containers are started concurrently, as ours are. Flask is
       ``pip install --target``-ed on this host and copied into an image ``FROM`` the same agent image
       (precompiled, like ours).
old-stdlib: the same with the standard library's ThreadingHTTPServer instead of Flask (a lighter server
       than the old design had; shown so the ratio does not depend on Flask's weight alone).
Every timing includes starting and removing both containers. Runs alternate between the designs; the
median over ``--repeat`` runs is shown. Before the duels, ``--launches`` single launches are timed phase by
phase (create, start, harness connected, ``ready``, exit after ``close``, removal) to show where a
container's start-up goes, and ours prints where its duels went (the duel JSON's ``phases_s``: starting
both agents to ready and pinned, playing, closing; plus sandbox creation and ``close`` outside the referee).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import statistics
import subprocess
import sys
import tarfile
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
from docker.errors import ImageNotFound  # noqa: E402
from http_baseline.baseline import HttpPlayer, build_http_image, play_http_duel  # noqa: E402

from environments import get_game  # noqa: E402
from run_duel.referee import play_duel  # noqa: E402
from run_duel.sandbox.base import LaunchSpec, Limits  # noqa: E402
from run_duel.sandbox.docker import DockerSandbox  # noqa: E402
from run_duel.sandbox.docker_client import get_client  # noqa: E402

GAME = "connect-four"
LIMITS = Limits(move_timeout=5.0, init_timeout=30.0)
FLASK_REQUIREMENT = "flask>=3,<4"

#: The old design's player server: a Flask app answering one protocol message per POST.
FLASK_SERVER = '''"""Benchmark only: the old rl-arena player, a Flask app answering a POST per move."""
import importlib
import logging
import os
import sys

import numpy as np
from flask import Flask, jsonify, request

sys.path.insert(0, "/agent")
os.chdir("/agent")
PLAYER = importlib.import_module("player").Player(False)
app = Flask(__name__)
logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no per-request log line: spares the baseline


def _action(value):
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.ndarray) and value.size == 1:
        return int(value.reshape(()).item())
    return value


@app.get("/")
def ready():
    return jsonify(type="ready")


@app.post("/")
def message():
    msg = request.get_json(force=True)
    kind = msg["type"]
    if kind == "start":
        action = PLAYER.start(np.asarray(msg["state"]), np.asarray(msg["valid_actions"], dtype=np.int64))
        return jsonify(type="action", action=_action(action))
    if kind == "step":
        action = PLAYER.step(
            np.asarray(msg["state"]), np.asarray(msg["valid_actions"], dtype=np.int64), msg["reward"]
        )
        return jsonify(type="action", action=_action(action))
    if kind == "end":
        PLAYER.end(np.asarray(msg["state"]), msg["reward"])
        return jsonify(type="ended")
    return jsonify(type="closed")


if __name__ == "__main__":
    app.run(host="0.0.0.0", port=8080, threaded=True)
'''


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def build_flask_image(agent_image: str) -> tuple[str, str]:
    """``agent_image`` + Flask (pip-installed here, copied in, precompiled) as entrypoint; (tag, version)."""
    client = get_client()
    base_id = client.api.inspect_image(agent_image)["Id"]
    key = hashlib.sha256(f"{base_id}\0{FLASK_SERVER}\0{FLASK_REQUIREMENT}".encode()).hexdigest()[:16]
    tag = f"rl-arena-bench-flask:{key}"
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        try:
            labels = client.api.inspect_image(tag)["Config"]["Labels"] or {}
            return tag, labels.get("flask-version", "?")
        except ImageNotFound:
            pass  # not built yet
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--target", str(site), FLASK_REQUIREMENT],
            check=True,
        )
        version = next(site.glob("flask-*.dist-info")).name.removesuffix(".dist-info").split("-", 1)[1]
        dockerfile = (
            f"FROM {agent_image}\nUSER 0\nCOPY site/ /opt/baseline/site/\n"
            "COPY flask_server.py /opt/baseline/\n"
            "RUN python3 -m compileall -q /opt/baseline >/dev/null\n"
            f'LABEL flask-version="{version}"\nUSER 10001:10001\nENV PYTHONPATH=/opt/baseline/site\n'
            'ENTRYPOINT ["python3", "-B", "/opt/baseline/flask_server.py"]\n'
        )
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            _add(tar, "Dockerfile", dockerfile.encode())
            _add(tar, "flask_server.py", FLASK_SERVER.encode())
            tar.add(site, arcname="site")
        buffer.seek(0)
        for item in client.api.build(fileobj=buffer, custom_context=True, tag=tag, rm=True, decode=True):
            if "error" in item:
                raise RuntimeError(f"building the Flask baseline image failed: {item['error']}")
    return tag, version


def ours(image: str, matches: int) -> tuple[float, dict]:
    """Wall time of the duel as a duel task runs it: sandbox, launches, referee, removal of both."""
    t0 = time.perf_counter()
    sandbox = DockerSandbox()
    try:
        spec = LaunchSpec(agent=image, labels={"duel": "bench"})
        duel = play_duel(GAME, sandbox, spec, spec, matches=matches, limits=LIMITS)
    finally:
        sandbox.close()
    elapsed = time.perf_counter() - t0
    errors = duel["player_1_errors"] + duel["player_2_errors"] + duel["other_errors"]
    if errors:
        raise RuntimeError(f"the duel had errors: {duel['matches'][0]['error_msg']}")
    return elapsed, duel


def old(http_image: str, matches: int) -> tuple[float, dict]:
    """Wall time of the same duel in the old design (both containers started and removed)."""
    game = get_game(GAME)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=2) as pool:  # both containers start concurrently, as ours do
        first, second = pool.map(HttpPlayer, (http_image, http_image))
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
    sandbox = DockerSandbox()
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


def main() -> int:
    """Time the launch phases, run the three designs ``--repeat`` times, print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--matches", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--launches", type=int, default=7)
    args = parser.parse_args()
    image = build_random_image()
    stdlib_image = build_http_image(image)
    flask_image, flask_version = build_flask_image(image)

    ms = launch_phases(image, args.launches)
    print(f"one agent's life in our Docker sandbox, median of {args.launches} launches (ms):")
    print(
        f"  create {ms['create']:.0f} + start {ms['start']:.0f} + harness connected {ms['connect']:.0f}"
        f" = launch {ms['launch']:.0f}; then ready (numpy + player.py) {ms['ready']:.0f};"
        f" exit after close {ms['exit']:.0f}; log + removal {ms['kill']:.0f} (remove call {ms['remove']:.0f})"
    )

    times: dict[str, list[float]] = {"ours": [], "flask": [], "stdlib": []}
    phases: dict[str, list[float]] = {"start": [], "play": [], "close": [], "outside the referee": []}
    for _ in range(args.repeat):
        elapsed, duel = ours(image, args.matches)
        times["ours"].append(elapsed)
        for name, value in duel["phases_s"].items():
            phases[name].append(value)
        phases["outside the referee"].append(elapsed - duel["duration_s"])
        moves = sum(m["num_moves"] for m in duel["matches"])
        move_times = [t for m in duel["matches"] for t in m["move_times"]]
        elapsed, flask_tally = old(flask_image, args.matches)
        times["flask"].append(elapsed)
        elapsed, _ = old(stdlib_image, args.matches)
        times["stdlib"].append(elapsed)
    med = {name: statistics.median(values) for name, values in times.items()}
    runs = {name: ", ".join(f"{v:.2f}" for v in values) for name, values in times.items()}
    print(f"{args.matches}-match {GAME} duel, random vs random, median of {args.repeat} runs (all runs in s)")
    print(f"  ours (Docker, Unix socket, full referee):  {med['ours']:6.2f} s  [{runs['ours']}]")
    print(
        f"      {moves} moves in the last run; "
        f"send->reply median {statistics.median(move_times) * 1e6:.0f} µs"
    )
    print(
        "      where it goes (medians): "
        + ", ".join(f"{name} {statistics.median(values):.3f} s" for name, values in phases.items())
        + f"; cores {duel['cpus']}"
    )
    print(
        f"  old  (Flask {flask_version} per player, HTTP per move): {med['flask']:6.2f} s  [{runs['flask']}]"
    )
    print(f"      {flask_tally['moves']} moves in the last run")
    print(f"  old, stdlib http.server instead of Flask:  {med['stdlib']:6.2f} s  [{runs['stdlib']}]")
    print(f"  speed-up vs the old design (Flask): {med['flask'] / med['ours']:.1f}x")
    print(f"  speed-up vs the lighter stdlib HTTP server: {med['stdlib'] / med['ours']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
