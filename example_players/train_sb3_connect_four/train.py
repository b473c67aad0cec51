"""Train a Connect Four agent with Stable-Baselines3 (sb3-contrib's MaskablePPO, torch on the CPU) against
an arena's league, export it to ONNX, and submit checkpoints through the client as it trains.

    pip install -e '.[train,rl]'    # torch (CPU), stable-baselines3, sb3-contrib over the 'train' extra
    python example_players/train_sb3_connect_four/train.py --server https://arena.example \\
        --cpu-minutes 10 --submit-every 20000 --name my-sb3-bot --public    # token: rl-arena login

- **Opponents**: ``rl_arena_client.league``: the arena's public Connect Four agents (``--server``, fetched
  and run in the local sandbox with the arena's harness) or local agent folders (``--opponent DIR``,
  default: the random example), an in-process depth-2 minimax (``--minimax-depth``, 0 for none) and
  frozen snapshots of the learner (self-play, one every ``--snapshot-every`` steps), drawn by PFSP.
- **Learner**: MaskablePPO, MLP 84 -> 128 -> 128 (ReLU) for the policy and for the value, illegal columns
  masked; observations are the arena's board as two planes (mine, theirs), flattened.
- **Callback** (``rl_arena_client.training.TrainingRun``, shared with the RLlib example): stops at
  ``--cpu-minutes`` of this process's CPU time (or ``--steps``), adds snapshots, exports a checkpoint
  folder (``player.py``, ``model.onnx``, ``model.npz``, ``requirements.txt``) every ``--submit-every``
  steps and submits it (``CheckpointSubmitter``), and reports each checkpoint's build and the competitor's
  rating as they come (``--wait-rating S`` waits for it at the end).
- **Output** (``--out``, default this folder): ``model.onnx``, ``model.npz``, ``training.json``.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
for path in (REPO, REPO / "client"):  # a checkout without the client installed
    if str(path) not in sys.path:
        sys.path.append(str(path))

from rl_arena_client import training  # noqa: E402
from rl_arena_client.league import LeagueEnv, OpponentPool, PolicyOpponent  # noqa: E402
from rl_arena_client.mlp_player import planes  # noqa: E402


def make_env(pool: OpponentPool, *, no_bwrap: bool = False):
    """The league as SB3 wants it: flat (84,) float observations and an ``action_masks()`` method."""
    import gymnasium
    from gymnasium import spaces

    class FlatLeague(gymnasium.Wrapper):
        def __init__(self, env) -> None:
            super().__init__(env)
            self.observation_space = spaces.Box(0.0, 1.0, (84,), np.float32)
            self._mask = np.ones(7, dtype=bool)

        def _flat(self, obs):
            self._mask = obs["action_mask"].astype(bool)
            return planes(obs["observation"]).ravel()

        def reset(self, **kwargs):
            obs, info = self.env.reset(**kwargs)
            return self._flat(obs), info

        def step(self, action):
            obs, reward, terminated, truncated, info = self.env.step(action)
            return self._flat(obs), reward, terminated, truncated, info

        def action_masks(self) -> np.ndarray:
            return self._mask

    return FlatLeague(LeagueEnv("connect-four", pool, no_bwrap=no_bwrap))


def policy_weights(model) -> training.Weights:
    """The policy's MLP and action head as the arrays ``player.py`` reads (x @ w + b)."""
    net = model.policy.mlp_extractor.policy_net
    return training.linear_weights([m for m in net if hasattr(m, "weight")] + [model.policy.action_net])


def train(args: argparse.Namespace) -> dict:
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback

    torch.set_num_threads(1)
    run = training.TrainingRun(
        args, add_snapshot=lambda name, w: training.add_snapshot(pool, name, w, args.pool_size)
    )
    opponents = training.league_opponents(
        server=args.server,
        cache=args.cache,
        folders=args.opponent,
        minimax_depth=args.minimax_depth,
        log=run.log,
    )
    pool = OpponentPool(opponents, weighting="hard", results_path=run.out / "league-results.json")
    if args.in_process_random:
        pool.add(PolicyOpponent("random-in-process", training.random_policy(random.Random(args.seed))))
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

    class ArenaCallback(BaseCallback):
        def _on_step(self) -> bool:
            run.after(self.num_timesteps, lambda: policy_weights(self.model))
            return run.within_budget(self.num_timesteps)

    try:
        model.learn(total_timesteps=args.steps, callback=ArenaCallback())
    finally:
        env.close()
    report = {
        "library": "stable-baselines3 + sb3-contrib MaskablePPO, torch " + torch.__version__,
        "steps": int(model.num_timesteps),
        "league": training.league_report(pool.results),
    }
    return run.finish(report, policy_weights(model))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    training.add_arguments(p, name="sb3-connect-four", out=HERE)
    p.add_argument("--in-process-random", action="store_true", help="also a random opponent in process")
    p.add_argument("--n-steps", type=int, default=1024)
    p.add_argument("--batch-size", type=int, default=256)
    args = p.parse_args(argv)
    if args.quick:
        args.steps, args.n_steps, args.batch_size, args.epochs = 256, 128, 64, 1
        args.snapshot_every = 128
    return args


if __name__ == "__main__":
    train(parse_args())
