"""Train a Connect Four agent with Ray RLlib (PPO with action masking, torch on the CPU) against an arena's
league, export it to ONNX, and submit checkpoints through the client as it trains.

    pip install -e '.[train,rl]'    # torch (CPU), ray[rllib] over the 'train' extra
    python example_players/train_rllib_connect_four/train.py --server https://arena.example \\
        --cpu-minutes 10 --submit-every 20000 --name my-rllib-bot --public    # token: rl-arena login

The same script on a Ray cluster: start the cluster (``ray start --head --port 6380`` on one machine,
``ray start --address=HEAD:6380`` on the others), then run it with ``RAY_ADDRESS=HEAD:6380
RAY_AUTH_MODE=token`` (or ``--address``; ``auto`` on a node) and ``--env-runners N``: the episodes are
played by N env runners spread over the cluster (each fetches the league into its own ``--cache`` and runs
the opponents in its own local sandbox), the learner stays in this process. See docs/TRAINING.md.

- **Opponents**: ``rl_arena_client.league`` (as ``train_sb3_connect_four``): the arena's public agents
  (``--server``) or local folders (``--opponent``, default the random example) in the local sandbox, an
  in-process minimax (``--minimax-depth``), and frozen snapshots of the learner (self-play, one every
  ``--snapshot-every`` steps, sent to every env runner), drawn by PFSP.
- **Learner**: RLlib's PPO on the new API stack with ``ActionMaskingTorchRLModule`` (illegal columns get
  no probability), encoder MLP 128-128 ReLU and a linear policy head: the network ``player.py`` plays.
- **Loop** (``rl_arena_client.training.TrainingRun``, shared with the SB3 example): ``algo.train()`` until
  ``--cpu-minutes`` of this process's CPU time (env runners included when they run here:
  ``--env-runners 0``) or ``--steps``; after each iteration: snapshots, a checkpoint folder exported and
  submitted every ``--submit-every`` steps (``CheckpointSubmitter``), builds and the rating reported as
  they come (``--wait-rating S`` waits for it at the end).
- **Output** (``--out``, default this folder): ``model.onnx``, ``model.npz``, ``training.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
for path in (REPO, REPO / "client"):  # a checkout without the client installed
    if str(path) not in sys.path:
        sys.path.append(str(path))

from rl_arena_client import training  # noqa: E402
from rl_arena_client.mlp_player import planes  # noqa: E402


def _league_env_class():
    """The league as RLlib's action-masking module wants it: ``{"observations": (84,), "action_mask"}``.
    Built by each env runner from ``env_config`` (plain values: it may run on another machine)."""
    import gymnasium
    from gymnasium import spaces
    from rl_arena_client.league import LeagueEnv, OpponentPool

    class RllibLeague(gymnasium.Env):
        def __init__(self, config: dict | None = None) -> None:
            config = dict(config or {})
            opponents = training.league_opponents(
                server=config.get("server"),
                cache=config.get("cache", "."),
                folders=config.get("opponents"),
                minimax_depth=config.get("minimax_depth", 0),
                log=lambda _: None,
            )
            self.pool = OpponentPool(opponents, weighting="hard")
            self.league = LeagueEnv("connect-four", self.pool, no_bwrap=bool(config.get("no_bwrap")))
            self.observation_space = spaces.Dict(
                {
                    "observations": spaces.Box(0.0, 1.0, (84,), np.float32),
                    "action_mask": spaces.Box(0.0, 1.0, (7,), np.float32),
                }
            )
            self.action_space = spaces.Discrete(7)
            self.keep = int(config.get("pool_size", 8))

        def _obs(self, obs):
            return {
                "observations": planes(obs["observation"]).ravel(),
                "action_mask": obs["action_mask"].astype(np.float32),
            }

        def reset(self, *, seed=None, options=None):
            obs, info = self.league.reset(seed=seed)
            return self._obs(obs), info

        def step(self, action):
            obs, reward, terminated, truncated, info = self.league.step(int(action))
            return self._obs(obs), reward, terminated, truncated, info

        def add_snapshot(self, name: str, weights: training.Weights) -> None:
            training.add_snapshot(self.pool, name, weights, self.keep)

        def results(self) -> dict[str, list[float]]:
            return dict(self.pool.results)

        def close(self) -> None:
            self.league.close()

    return RllibLeague


def policy_weights(module) -> training.Weights:
    """The actor encoder's two Linear layers and the policy head as ``player.py``'s arrays (x @ w + b)."""
    from torch import nn

    encoder = getattr(module.encoder, "actor_encoder", module.encoder)
    layers = [m for m in encoder.modules() if isinstance(m, nn.Linear)]
    return training.linear_weights(layers + [m for m in module.pi.modules() if isinstance(m, nn.Linear)])


def build_config(args: argparse.Namespace):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

    env_config = {
        "server": args.server,
        "cache": args.cache,
        "opponents": [str(f) for f in (args.opponent or [training.RANDOM_FOLDER])],
        "minimax_depth": args.minimax_depth,
        "no_bwrap": args.no_bwrap,
        "pool_size": args.pool_size,
    }
    return (
        PPOConfig()
        .environment(env=_league_env_class(), env_config=env_config)
        .env_runners(num_env_runners=args.env_runners, num_envs_per_env_runner=1, num_cpus_per_env_runner=1)
        .learners(num_learners=0)
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=ActionMaskingTorchRLModule,
                model_config={
                    "fcnet_hiddens": [128, 128],
                    "fcnet_activation": "relu",
                    "head_fcnet_hiddens": [],
                    "vf_share_layers": False,
                },
            )
        )
        .training(
            lr=args.lr,
            gamma=args.gamma,
            entropy_coeff=args.ent_coef,
            train_batch_size_per_learner=args.batch,
            minibatch_size=args.minibatch,
            num_epochs=args.epochs,
        )
        .debugging(seed=args.seed, log_level="ERROR")
    )


def _each_env(algo, fn) -> list:
    """``fn(env)`` on every league env of every env runner (the local one when there are no remote ones)."""
    group = algo.env_runner_group

    def on_runner(runner):
        return [fn(env.unwrapped) for env in runner.env.unwrapped.envs]

    per_runner = group.foreach_env_runner(on_runner, local_env_runner=group.num_remote_env_runners() == 0)
    return [answer for answers in per_runner for answer in answers]


def train(args: argparse.Namespace) -> dict:
    import ray
    import torch

    torch.set_num_threads(1)
    algo = None
    run = training.TrainingRun(
        args, add_snapshot=lambda name, w: _each_env(algo, lambda env: env.add_snapshot(name, w))
    )
    address = args.address or os.environ.get("RAY_ADDRESS")
    ray.init(
        address=address,
        num_cpus=None if address else max(1, args.env_runners + 1),
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        # the env runners import the client and the arena's packages from this checkout (on a cluster,
        # the same path on every node, or the client installed there)
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "client")])}},
    )
    if address:
        run.log(f"Ray cluster at {address}: {ray.cluster_resources().get('CPU', 0):.0f} CPUs")
    algo = build_config(args).build_algo()
    steps = iterations = 0
    try:
        while run.within_budget(steps):
            result = algo.train()
            iterations += 1
            steps = int(result["num_env_steps_sampled_lifetime"])
            run.after(steps, lambda: policy_weights(algo.get_module()))
            if iterations % args.log_every == 0:
                run.log(f"iteration {iterations}: {steps} steps, {run.cpu_seconds():.0f} CPU s")
        league: dict[str, list[float]] = {}
        for results in _each_env(algo, lambda env: env.results()):
            for name, (score, games) in results.items():
                total = league.setdefault(name, [0.0, 0])
                total[0] += score
                total[1] += games
        weights = policy_weights(algo.get_module())
        _each_env(algo, lambda env: env.close())
    finally:
        algo.stop()
        ray.shutdown()
    report = {
        "library": f"Ray RLlib {ray.__version__} PPO (ActionMaskingTorchRLModule), torch {torch.__version__}",
        "steps": steps,
        "iterations": iterations,
        "env_runners": args.env_runners,
        "league": training.league_report(league),
    }
    return run.finish(report, weights)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    training.add_arguments(p, name="rllib-connect-four", out=HERE)
    p.add_argument(
        "--address",
        help="a Ray cluster to join ('auto' on one of its nodes; else $RAY_ADDRESS, else a local Ray)",
    )
    p.add_argument(
        "--env-runners", type=int, default=0, help="remote env runners (0: sample in this process)"
    )
    p.add_argument("--batch", type=int, default=2000, help="steps per training iteration")
    p.add_argument("--minibatch", type=int, default=250)
    p.add_argument("--log-every", type=int, default=5)
    args = p.parse_args(argv)
    if args.quick:
        args.steps, args.batch, args.minibatch, args.epochs = 400, 200, 100, 1
        args.snapshot_every, args.log_every = 200, 1
    return args


if __name__ == "__main__":
    train(parse_args())
