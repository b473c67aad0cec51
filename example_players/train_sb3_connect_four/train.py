"""Train a Connect Four agent with Stable-Baselines3 (sb3-contrib's MaskablePPO, torch on the CPU) against
an arena's league, export it to ONNX, and submit checkpoints through the client as it trains.

    pip install -e '.[rl]'          # torch (CPU), stable-baselines3, sb3-contrib over the 'train' extra
    python example_players/train_sb3_connect_four/train.py --server https://arena.example \\
        --cpu-minutes 10 --submit-every 20000 --name my-sb3-bot --public    # token: rl-arena login

- **Opponents**: ``rl_arena_client.league``: the arena's public Connect Four agents (``--server``, fetched
  and run in the local sandbox with the arena's harness) or local agent folders (``--opponent DIR``,
  default: example_players/random), an in-process depth-2 minimax (``--minimax-depth``, 0 for none) and
  frozen snapshots of the learner (self-play, one every ``--snapshot-every`` steps), drawn by PFSP.
- **Learner**: MaskablePPO, MLP 84 -> 128 -> 128 (ReLU) for the policy and for the value, illegal columns
  masked; observations are the arena's board as two planes (mine, theirs), flattened.
- **Callback**: stops at ``--cpu-minutes`` of this process's CPU time (or ``--steps``), adds snapshots,
  exports a checkpoint folder (``player.py``, ``model.onnx``, ``model.npz``, ``requirements.txt``) every
  ``--submit-every`` steps and submits it (``CheckpointSubmitter``), and reports each checkpoint's build and
  the competitor's rating as they come (``--wait-rating S`` waits for it at the end).
- **Output** (``--out``, default this folder): ``model.onnx``, ``model.npz``, ``training.json``.
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
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

AGENT_FILES = ("player.py", "requirements.txt")


def _load_module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


PLAYER = _load_module("_sb3_c4_player", HERE / "player.py")


def minimax_policy(depth: int):
    """example_players/minimax's search at ``depth`` (10 ms a move) as an in-process league opponent."""
    engine_module = _load_module(
        "_sb3_c4_minimax", REPO / "example_players" / "minimax" / "connect_four_ai.py"
    )
    engine = engine_module.ConnectFourAI(time_budget=0.01, max_depth=depth)
    return lambda board, mask: int(
        engine.choose(board.astype(np.int64), [int(a) for a in np.flatnonzero(mask)])
    )


def random_policy(rng: random.Random):
    return lambda board, mask: rng.choice([int(a) for a in np.flatnonzero(mask)])


# ------------------------------------------------------------------------------------------ environment


def make_env(pool, *, no_bwrap: bool = False):
    """The league as SB3 wants it: flat (84,) float observations and an ``action_masks()`` method."""
    import gymnasium
    from gymnasium import spaces
    from rl_arena_client.league import LeagueEnv

    class FlatLeague(gymnasium.Wrapper):
        def __init__(self, env) -> None:
            super().__init__(env)
            self.observation_space = spaces.Box(0.0, 1.0, (84,), np.float32)
            self._mask = np.ones(7, dtype=bool)

        def _flat(self, obs):
            self._mask = obs["action_mask"].astype(bool)
            return PLAYER.planes(obs["observation"]).ravel()

        def reset(self, **kwargs):
            obs, info = self.env.reset(**kwargs)
            return self._flat(obs), info

        def step(self, action):
            obs, reward, terminated, truncated, info = self.env.step(action)
            return self._flat(obs), reward, terminated, truncated, info

        def action_masks(self) -> np.ndarray:
            return self._mask

    return FlatLeague(LeagueEnv("connect-four", pool, no_bwrap=no_bwrap))


# ------------------------------------------------------------------------------------------ export


def policy_weights(model) -> dict[str, np.ndarray]:
    """The policy's MLP and action head as the numpy arrays ``player.py`` reads (x @ w + b)."""
    net = model.policy.mlp_extractor.policy_net
    head = model.policy.action_net
    layers = [m for m in net if hasattr(m, "weight")] + [head]
    out = {}
    for (w, b), layer in zip((("w1", "b1"), ("w2", "b2"), ("wp", "bp")), layers, strict=True):
        out[w] = layer.weight.detach().cpu().numpy().T.astype(np.float32).copy()
        out[b] = layer.bias.detach().cpu().numpy().astype(np.float32).copy()
    return out


def export(model, folder: Path) -> None:
    """Write an agent folder: ``model.onnx`` (torch.onnx), ``model.npz`` and the player's files."""
    import torch
    from torch import nn

    class Exported(nn.Module):
        def __init__(self, policy) -> None:
            super().__init__()
            self.features = policy.mlp_extractor.policy_net
            self.head = policy.action_net

        def forward(self, observation, action_mask):
            logits = self.head(self.features(observation.reshape(observation.shape[0], -1)))
            return torch.where(action_mask > 0, logits, torch.full_like(logits, -1e9))

    folder.mkdir(parents=True, exist_ok=True)
    module = Exported(model.policy).eval()
    sample = (torch.zeros(1, 6, 7, 2), torch.ones(1, 7))
    with warnings.catch_warnings():  # the torch.export-based exporter needs onnxscript: the legacy one
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            module,
            sample,
            str(folder / "model.onnx"),
            input_names=["observation", "action_mask"],
            output_names=["logits"],
            dynamic_axes={"observation": {0: "batch"}, "action_mask": {0: "batch"}, "logits": {0: "batch"}},
            dynamo=False,
        )
    np.savez(folder / "model.npz", **policy_weights(model))
    if folder.resolve() != HERE:
        for name in AGENT_FILES:
            shutil.copy(HERE / name, folder / name)


# ------------------------------------------------------------------------------------------ training


def build_pool(args: argparse.Namespace, log):
    from rl_arena_client.api import Client, load_config
    from rl_arena_client.league import OpponentPool, PolicyOpponent, fetch_league, local_opponents

    if args.server:
        opponents = fetch_league(Client(args.server), "connect-four", Path(args.cache), log=log)
        log(f"league from {args.server}: {', '.join(o.name for o in opponents) or 'nobody'}")
    else:
        opponents = local_opponents(Path(f) for f in args.opponent or [REPO / "example_players" / "random"])
    pool = OpponentPool(opponents, weighting="hard", results_path=Path(args.out) / "league-results.json")
    if args.minimax_depth:
        pool.add(PolicyOpponent(f"minimax-d{args.minimax_depth}", minimax_policy(args.minimax_depth)))
    if args.in_process_random:
        pool.add(PolicyOpponent("random-in-process", random_policy(random.Random(args.seed))))
    submitter = None
    if args.submit_every:
        from rl_arena_client.submission import CheckpointSubmitter

        server = args.server or os.environ.get("RL_ARENA_SERVER") or load_config().get("server")
        token = os.environ.get("RL_ARENA_TOKEN") or load_config().get("token")
        if not (server and token):
            raise SystemExit("--submit-every needs --server and a token (rl-arena login, or RL_ARENA_TOKEN)")
        submitter = CheckpointSubmitter(
            Client(server, token),
            "connect-four",
            args.name,
            public=args.public,
            poll_every=args.poll,
            log=log,
        )
    return pool, submitter


def make_callback(args: argparse.Namespace, pool, submitter, log):
    from stable_baselines3.common.callbacks import BaseCallback

    class ArenaCallback(BaseCallback):
        """Budget, self-play snapshots, checkpoint submission and rating reports."""

        def __init__(self) -> None:
            super().__init__()
            self.started = time.process_time()
            self.snapshots = 0
            self.submitted = 0

        def cpu_seconds(self) -> float:
            return time.process_time() - self.started

        def _on_step(self) -> bool:
            steps = self.num_timesteps
            if args.snapshot_every and steps // args.snapshot_every > self.snapshots:
                self.snapshots = steps // args.snapshot_every
                frozen = PLAYER.NumpyPolicy.__new__(PLAYER.NumpyPolicy)
                frozen.w = policy_weights(self.model)
                name = f"self-{steps}"
                pool.add_snapshot(name, lambda board, mask, f=frozen: _greedy(f, board, mask))
                _trim_snapshots(pool, args.pool_size)
            if submitter is not None and steps // args.submit_every > self.submitted:
                self.submitted = steps // args.submit_every
                folder = Path(args.out) / "checkpoints" / f"step-{steps}"
                export(self.model, folder)
                submitter.submit(folder, steps)
            if submitter is not None:
                submitter.poll()
            return self.cpu_seconds() < args.cpu_minutes * 60

    return ArenaCallback()


def _greedy(policy, board: np.ndarray, mask: np.ndarray) -> int:
    logits = policy.logits(PLAYER.planes(board)[None])[0]
    legal = np.flatnonzero(mask)
    return int(legal[np.argmax(logits[legal])])


def _trim_snapshots(pool, keep: int) -> None:
    snapshots = [o for o in pool.opponents if o.name.startswith("self-")]
    for old in snapshots[: max(0, len(snapshots) - keep)]:
        pool.opponents.remove(old)


def train(args: argparse.Namespace) -> dict:
    import torch
    from sb3_contrib import MaskablePPO

    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []

    def log(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    pool, submitter = build_pool(args, log)
    env = make_env(pool, no_bwrap=args.no_bwrap)
    model = MaskablePPO(
        "MlpPolicy",
        env,
        learning_rate=args.lr,
        n_steps=args.n_steps,
        batch_size=args.batch_size,
        n_epochs=args.epochs,
        gamma=args.gamma,
        ent_coef=args.ent_coef,
        policy_kwargs={"net_arch": {"pi": [128, 128], "vf": [128, 128]}, "activation_fn": torch.nn.ReLU},
        seed=args.seed,
        device="cpu",
        verbose=0,
    )
    callback = make_callback(args, pool, submitter, log)
    wall = time.monotonic()
    try:
        model.learn(total_timesteps=args.steps, callback=callback)
    finally:
        env.close()
    report = {
        "library": "stable-baselines3 + sb3-contrib MaskablePPO, torch " + torch.__version__,
        "steps": int(model.num_timesteps),
        "cpu_seconds": round(callback.cpu_seconds(), 1),
        "wall_seconds": round(time.monotonic() - wall, 1),
        "league": {
            name: {"score": round(s / g, 3), "games": int(g)} for name, (s, g) in pool.results.items()
        },
    }
    log(f"trained {report['steps']} steps in {report['cpu_seconds']} CPU s ({report['wall_seconds']} s wall)")
    export(model, out)
    if submitter is not None:
        if args.wait_rating:
            submitter.wait(args.wait_rating)
        else:
            submitter.poll(force=True)
        report["checkpoints"] = [vars(cp) for cp in submitter.checkpoints]
        report["rating"] = submitter.rating
    report["log"] = lines
    (out / "training.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="a few hundred steps, for the tests")
    p.add_argument("--out", default=str(HERE), help="output folder (default: this folder)")
    p.add_argument("--server", help="train against this arena's public agents (else local folders)")
    p.add_argument("--cache", default=str(Path.home() / ".cache" / "rl-arena"), help="fetched agents")
    p.add_argument("--opponent", action="append", help="a local agent folder (repeatable)")
    p.add_argument("--minimax-depth", type=int, default=2, help="in-process minimax opponent (0: none)")
    p.add_argument("--in-process-random", action="store_true", help="also a random opponent in process")
    p.add_argument("--no-bwrap", action="store_true", help="run opponents without bubblewrap")
    p.add_argument("--cpu-minutes", type=float, default=10.0, help="budget: this process's CPU time")
    p.add_argument("--steps", type=int, default=10_000_000, help="budget: environment steps")
    p.add_argument("--n-steps", type=int, default=1024)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--gamma", type=float, default=0.97)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--snapshot-every", type=int, default=10_000, help="self-play snapshot (0: none)")
    p.add_argument("--pool-size", type=int, default=8, help="self-play snapshots kept")
    p.add_argument("--submit-every", type=int, default=0, help="submit a checkpoint every N steps")
    p.add_argument("--name", default="sb3-connect-four", help="the competitor's name")
    p.add_argument("--public", action="store_true", help="submit as a public agent")
    p.add_argument("--poll", type=float, default=30.0, help="seconds between checks of the submissions")
    p.add_argument("--wait-rating", type=float, default=0.0, help="at the end, wait up to S s for a rating")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.quick:
        args.steps, args.n_steps, args.batch_size, args.epochs = 256, 128, 64, 1
        args.snapshot_every = 128
    return args


if __name__ == "__main__":
    train(parse_args())
