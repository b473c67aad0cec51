"""What the Connect Four training examples share (``example_players/train_sb3_connect_four``,
``train_rllib_connect_four``), whatever library learns: the command line, the league, self-play snapshots,
checkpoints exported and submitted every N steps with their build and rating reported, the final report.

    run = TrainingRun(args, add_snapshot=lambda name, weights: add_snapshot(pool, name, weights, 8))
    while run.within_budget(steps):
        steps = ...  # the library trains
        run.after(steps, lambda: weights_of(model))  # snapshots, checkpoints, builds and rating reported
    report = run.finish({"library": ..., "steps": steps, "league": league_report(pool.results)}, weights)

- **Weights**: the examples' networks are one MLP, 84 -> 128 -> 128 -> 7 (ReLU), given as numpy arrays
  ``w1, b1, w2, b2, wp, bp`` (``x @ w + b``); ``mlp_player.py`` plays them (``model.onnx`` on onnxruntime,
  else ``model.npz`` with numpy) and is copied into every exported folder as its ``player.py``.
- **Checkpoints** (``--submit-every N``): a folder ``<out>/checkpoints/step-<n>`` uploaded by
  ``CheckpointSubmitter``; ``--numpy-checkpoints`` leaves out ``model.onnx`` and ``requirements.txt``
  (for an arena whose sandbox installs no packages: ``SANDBOX=local``). ``--wait-rating S`` waits up to
  S seconds at the end for the competitor's rating, which lands in ``training.json``.
- **Budget**: ``--cpu-minutes`` of this process's CPU time (``time.process_time``) or ``--steps``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shutil
import sys
import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from rl_arena_client import mlp_player
from rl_arena_client.api import Client, load_config
from rl_arena_client.league import AnyOpponent, OpponentPool, PolicyOpponent, fetch_league, local_opponents

GAME = "connect-four"
PLAYER_FILE = Path(mlp_player.__file__)
MINIMAX_ENGINE = Path(__file__).resolve().parent / "opponents" / "minimax" / "connect_four_ai.py"
RANDOM_FOLDER = Path(__file__).resolve().parent / "opponents" / "random"
REQUIREMENTS = (
    "# Installed by the arena when it builds the agent (wheels only; see builder/README.md).\n"
    "onnxruntime>=1.17,<2\n"
)
WEIGHT_NAMES = (("w1", "b1"), ("w2", "b2"), ("wp", "bp"))
SNAPSHOT_PREFIX = "self-"

Weights = dict[str, np.ndarray]


# -- command line ----------------------------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser, *, name: str, out: Path) -> None:
    """The options every example takes (each adds its library's own)."""
    p.add_argument("--quick", action="store_true", help="a few hundred steps, for the tests")
    p.add_argument("--out", default=str(out), help=f"output folder (default: {out})")
    p.add_argument("--server", help="train against this arena's public agents (else local folders)")
    p.add_argument("--cache", default=str(Path.home() / ".cache" / "rl-arena"), help="fetched agents")
    p.add_argument("--opponent", action="append", help="a local agent folder (repeatable)")
    p.add_argument("--minimax-depth", type=int, default=2, help="in-process minimax opponent (0: none)")
    p.add_argument("--no-bwrap", action="store_true", help="run opponents without bubblewrap")
    p.add_argument("--cpu-minutes", type=float, default=10.0, help="budget: this process's CPU time")
    p.add_argument("--steps", type=int, default=10_000_000, help="budget: environment steps")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--gamma", type=float, default=0.97)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--snapshot-every", type=int, default=10_000, help="self-play snapshot (0: none)")
    p.add_argument("--pool-size", type=int, default=8, help="self-play snapshots kept")
    p.add_argument("--submit-every", type=int, default=0, help="submit a checkpoint every N steps")
    p.add_argument("--name", default=name, help="the competitor's name")
    p.add_argument("--public", action="store_true", help="submit as a public agent")
    p.add_argument(
        "--numpy-checkpoints",
        action="store_true",
        help="checkpoints without model.onnx and requirements.txt (an arena that installs no packages)",
    )
    p.add_argument("--poll", type=float, default=30.0, help="seconds between checks of the submissions")
    p.add_argument("--wait-rating", type=float, default=0.0, help="at the end, wait up to S s for a rating")
    p.add_argument("--seed", type=int, default=0)


# -- the league --------------------------------------------------------------------------------------------


def _load(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def minimax_policy(depth: int) -> Callable[[np.ndarray, np.ndarray], int]:
    """The bundled minimax's search at ``depth`` (10 ms a move) as an in-process league opponent."""
    engine = _load("_rl_arena_minimax_c4", MINIMAX_ENGINE).ConnectFourAI(time_budget=0.01, max_depth=depth)
    return lambda board, mask: int(
        engine.choose(board.astype(np.int64), [int(a) for a in np.flatnonzero(mask)])
    )


def random_policy(rng: random.Random) -> Callable[[np.ndarray, np.ndarray], int]:
    return lambda board, mask: rng.choice([int(a) for a in np.flatnonzero(mask)])


def league_opponents(
    *,
    server: str | None,
    cache: str | Path,
    folders: Iterable[str | Path] | None,
    minimax_depth: int,
    log: Callable[[str], None] = print,
) -> list[AnyOpponent]:
    """The arena's public agents (``server``) or local agent folders (default: the bundled random), plus
    an in-process minimax at ``minimax_depth`` (0: none)."""
    opponents: list[AnyOpponent]
    if server:
        opponents = list(fetch_league(Client(server), GAME, Path(cache), log=log))
        log(f"league from {server}: {', '.join(o.name for o in opponents) or 'nobody'}")
    else:
        opponents = list(local_opponents(Path(f) for f in (folders or [RANDOM_FOLDER])))
    if minimax_depth:
        opponents.append(PolicyOpponent(f"minimax-d{minimax_depth}", minimax_policy(minimax_depth)))
    return opponents


def greedy_policy(weights: Weights) -> Callable[[np.ndarray, np.ndarray], int]:
    """A frozen copy of the network: the legal column with the highest logit (what ``player.py`` plays)."""
    policy = mlp_player.NumpyPolicy.__new__(mlp_player.NumpyPolicy)
    policy.w = {k: np.array(v, dtype=np.float32) for k, v in weights.items()}

    def act(board: np.ndarray, mask: np.ndarray) -> int:
        logits = policy.logits(mlp_player.planes(board)[None])[0]
        legal = np.flatnonzero(mask)
        return int(legal[np.argmax(logits[legal])])

    return act


def add_snapshot(pool: OpponentPool, name: str, weights: Weights, keep: int) -> None:
    """Add a frozen learner to ``pool`` (self-play), keeping only the ``keep`` newest snapshots."""
    pool.add_snapshot(name, greedy_policy(weights))
    snapshots = [o for o in pool.opponents if o.name.startswith(SNAPSHOT_PREFIX)]
    for old in snapshots[: max(0, len(snapshots) - keep)]:
        pool.opponents.remove(old)


def league_report(results: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """``{opponent: {"score", "games"}}`` from a pool's results (score: wins + draws / 2, per game)."""
    return {n: {"score": round(s / g, 3), "games": int(g)} for n, (s, g) in results.items() if g}


# -- export ------------------------------------------------------------------------------------------------


def linear_weights(layers: list[Any]) -> Weights:
    """``w1, b1, w2, b2, wp, bp`` from the network's three torch ``Linear`` layers, input to output."""
    if len(layers) != 3:
        raise RuntimeError(f"expected 2 hidden layers and a linear head, found {len(layers)} layers")
    out = {}
    for (w, b), layer in zip(WEIGHT_NAMES, layers, strict=True):
        out[w] = layer.weight.detach().cpu().numpy().T.astype(np.float32).copy()
        out[b] = layer.bias.detach().cpu().numpy().astype(np.float32).copy()
    return out


def export_onnx(weights: Weights, path: Path) -> None:
    """``torch.onnx`` of the MLP: inputs ``observation`` (batch, 6, 7, 2) and ``action_mask`` (batch, 7),
    output ``logits`` with the illegal columns at -1e9."""
    import torch
    from torch import nn

    class Exported(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.l1, self.l2, self.head = (nn.Linear(*weights[w].shape) for w, _ in WEIGHT_NAMES)
            for layer, (w, b) in zip((self.l1, self.l2, self.head), WEIGHT_NAMES, strict=True):
                layer.weight.data = torch.from_numpy(weights[w].T.copy())
                layer.bias.data = torch.from_numpy(weights[b].copy())

        def forward(self, observation: Any, action_mask: Any) -> Any:
            x = observation.reshape(observation.shape[0], -1)
            logits = self.head(torch.relu(self.l2(torch.relu(self.l1(x)))))
            return torch.where(action_mask > 0, logits, torch.full_like(logits, -1e9))

    with warnings.catch_warnings():  # the torch.export-based exporter needs onnxscript: the legacy one
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            Exported().eval(),
            (torch.zeros(1, 6, 7, 2), torch.ones(1, 7)),
            str(path),
            input_names=["observation", "action_mask"],
            output_names=["logits"],
            dynamic_axes={"observation": {0: "batch"}, "action_mask": {0: "batch"}, "logits": {0: "batch"}},
            dynamo=False,
        )


def export_mlp(weights: Weights, folder: Path, *, onnx: bool = True) -> None:
    """Write an agent folder: ``player.py`` (``mlp_player.py``), ``model.npz`` and, with ``onnx``,
    ``model.onnx`` and the ``requirements.txt`` that asks the arena for onnxruntime. A folder that already
    holds ``player.py`` (an example's own, a link to ``mlp_player.py``) keeps it and its requirements."""
    folder.mkdir(parents=True, exist_ok=True)
    savez: Any = np.savez  # numpy's stubs type the keyword arrays as its own options
    savez(folder / "model.npz", **weights)
    if onnx:
        export_onnx(weights, folder / "model.onnx")
    if not (folder / "player.py").exists():
        shutil.copyfile(PLAYER_FILE, folder / "player.py")
        if onnx:
            (folder / "requirements.txt").write_text(REQUIREMENTS)


# -- the run -----------------------------------------------------------------------------------------------


def make_submitter(args: argparse.Namespace, log: Callable[[str], None]) -> Any:
    """A ``CheckpointSubmitter`` for ``--submit-every`` (the token from ``rl-arena login`` or
    ``$RL_ARENA_TOKEN``), or ``None``."""
    if not args.submit_every:
        return None
    from rl_arena_client.submission import CheckpointSubmitter

    server = args.server or os.environ.get("RL_ARENA_SERVER") or load_config().get("server")
    token = os.environ.get("RL_ARENA_TOKEN") or load_config().get("token")
    if not (server and token):
        raise SystemExit("--submit-every needs --server and a token (rl-arena login, or RL_ARENA_TOKEN)")
    return CheckpointSubmitter(
        Client(server, token), GAME, args.name, public=args.public, poll_every=args.poll, log=log
    )


class TrainingRun:
    """Budget, self-play snapshots, checkpoints submitted every N steps, builds and rating reported."""

    def __init__(self, args: argparse.Namespace, add_snapshot: Callable[[str, Weights], None]) -> None:
        self.args = args
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.lines: list[str] = []
        self._add_snapshot = add_snapshot
        self.submitter = make_submitter(args, self.log)
        self.started = time.process_time()
        self.wall = time.monotonic()
        self.snapshots = self.submitted = 0

    def log(self, text: str) -> None:
        print(text, flush=True)
        self.lines.append(text)

    def cpu_seconds(self) -> float:
        return time.process_time() - self.started

    def within_budget(self, steps: int) -> bool:
        return steps < self.args.steps and self.cpu_seconds() < self.args.cpu_minutes * 60

    def after(self, steps: int, weights: Callable[[], Weights]) -> None:
        """Called as training goes (every step or iteration): a snapshot every ``--snapshot-every`` steps,
        a checkpoint exported and submitted every ``--submit-every``, the submissions followed."""
        args = self.args
        if args.snapshot_every and steps // args.snapshot_every > self.snapshots:
            self.snapshots = steps // args.snapshot_every
            self._add_snapshot(f"{SNAPSHOT_PREFIX}{steps}", weights())
        if self.submitter is None:
            return
        if steps // args.submit_every > self.submitted:
            self.submitted = steps // args.submit_every
            folder = self.out / "checkpoints" / f"step-{steps}"
            export_mlp(weights(), folder, onnx=not args.numpy_checkpoints)
            self.submitter.submit(folder, steps)
        self.submitter.poll()

    def finish(self, report: dict[str, Any], weights: Weights) -> dict[str, Any]:
        """Export the final network into ``--out``, wait for (or read) the rating, write
        ``training.json``; the report with ``cpu_seconds``, ``wall_seconds``, checkpoints and rating."""
        report["cpu_seconds"] = round(self.cpu_seconds(), 1)
        report["wall_seconds"] = round(time.monotonic() - self.wall, 1)
        cpu, wall = report["cpu_seconds"], report["wall_seconds"]
        self.log(f"trained {report['steps']} steps in {cpu} CPU s ({wall} s wall)")
        export_mlp(weights, self.out)
        if self.submitter is not None:
            if self.args.wait_rating:
                self.submitter.wait(self.args.wait_rating)
            else:
                self.submitter.poll(force=True)
            report["checkpoints"] = [vars(cp) for cp in self.submitter.checkpoints]
            report["rating"] = self.submitter.rating
        report["log"] = self.lines
        (self.out / "training.json").write_text(json.dumps(report, indent=1) + "\n")
        return report
