"""Train a Connect Four agent with Ray RLlib (PPO with action masking, torch on the CPU) against an arena's
league, export it to ONNX, and submit checkpoints through the client as it trains.

    pip install -e '.[train,rl]' 'ray[rllib]==2.60.0'
    python example_players/train_rllib_connect_four/train.py --server https://arena.example \\
        --cpu-minutes 10 --submit-every 20000 --name my-rllib-bot --public    # token: rl-arena login

The same script on a Ray cluster: start the cluster (``ray start --head`` on one machine, ``ray start
--address=HEAD:6379`` on the others), then run it on the head with ``--address auto --env-runners N``: the
episodes are played by N env runners spread over the cluster (each fetches the league into its own
``--cache`` and runs the opponents in its own local sandbox), the learner stays on the head.

- **Opponents**: ``rl_arena_client.league`` (as ``train_sb3_connect_four``): the arena's public agents
  (``--server``) or local folders (``--opponent``, default example_players/random) in the local sandbox, an
  in-process minimax (``--minimax-depth``), and frozen snapshots of the learner (self-play, one every
  ``--snapshot-every`` steps, sent to every env runner), drawn by PFSP.
- **Learner**: RLlib's PPO on the new API stack with ``ActionMaskingTorchRLModule`` (illegal columns get
  no probability), encoder MLP 128-128 ReLU and a linear policy head: the network ``player.py`` plays.
- **Loop**: ``algo.train()`` until ``--cpu-minutes`` of this process's CPU time (env runners included when
  they run here: ``--env-runners 0``) or ``--steps``; after each iteration: snapshots, a checkpoint folder
  exported and submitted every ``--submit-every`` steps (``CheckpointSubmitter``), builds and the rating
  reported as they come (``--wait-rating S`` waits for it at the end).
- **Output** (``--out``, default this folder): ``model.onnx``, ``model.npz``, ``training.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
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


PLAYER = _load_module("_rllib_c4_player", HERE / "player.py")


def _greedy(weights: dict[str, np.ndarray], board: np.ndarray, mask: np.ndarray) -> int:
    policy = PLAYER.NumpyPolicy.__new__(PLAYER.NumpyPolicy)
    policy.w = weights
    logits = policy.logits(PLAYER.planes(board)[None])[0]
    legal = np.flatnonzero(mask)
    return int(legal[np.argmax(logits[legal])])


# ------------------------------------------------------------------------------------------ environment


def _league_env_class():
    """The league as RLlib's action-masking module wants it: ``{"observations": (84,), "action_mask"}``.
    Built by each env runner from ``env_config`` (plain values: it may run on another machine)."""
    import gymnasium
    from gymnasium import spaces
    from rl_arena_client.api import Client
    from rl_arena_client.league import LeagueEnv, OpponentPool, PolicyOpponent, fetch_league, local_opponents

    class RllibLeague(gymnasium.Env):
        def __init__(self, config: dict | None = None) -> None:
            config = dict(config or {})
            if config.get("server"):
                opponents = fetch_league(
                    Client(config["server"]), "connect-four", Path(config["cache"]), log=lambda _: None
                )
            else:
                opponents = local_opponents(Path(f) for f in config.get("opponents") or [])
            self.pool = OpponentPool(opponents, weighting="hard")
            if config.get("minimax_depth"):
                depth = config["minimax_depth"]
                engine = _load_module(
                    "_rllib_c4_minimax", REPO / "example_players" / "minimax" / "connect_four_ai.py"
                ).ConnectFourAI(time_budget=0.01, max_depth=depth)
                self.pool.add(
                    PolicyOpponent(
                        f"minimax-d{depth}",
                        lambda board, mask: int(
                            engine.choose(board.astype(np.int64), [int(a) for a in np.flatnonzero(mask)])
                        ),
                    )
                )
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
                "observations": PLAYER.planes(obs["observation"]).ravel(),
                "action_mask": obs["action_mask"].astype(np.float32),
            }

        def reset(self, *, seed=None, options=None):
            obs, info = self.league.reset(seed=seed)
            return self._obs(obs), info

        def step(self, action):
            obs, reward, terminated, truncated, info = self.league.step(int(action))
            return self._obs(obs), reward, terminated, truncated, info

        def add_snapshot(self, name: str, weights: dict[str, np.ndarray]) -> None:
            self.pool.add_snapshot(name, lambda board, mask: _greedy(weights, board, mask))
            snapshots = [o for o in self.pool.opponents if o.name.startswith("self-")]
            for old in snapshots[: max(0, len(snapshots) - self.keep)]:
                self.pool.opponents.remove(old)

        def results(self) -> dict[str, list[float]]:
            return dict(self.pool.results)

        def close(self) -> None:
            self.league.close()

    return RllibLeague


# ------------------------------------------------------------------------------------------ export


def policy_weights(module) -> dict[str, np.ndarray]:
    """The actor encoder's two Linear layers and the policy head as ``player.py``'s arrays (x @ w + b)."""
    from torch import nn

    encoder = getattr(module.encoder, "actor_encoder", module.encoder)
    layers = [m for m in encoder.modules() if isinstance(m, nn.Linear)]
    layers += [m for m in module.pi.modules() if isinstance(m, nn.Linear)]
    if len(layers) != 3:
        raise RuntimeError(f"expected 2 encoder layers and a linear head, found {len(layers)} layers")
    out = {}
    for (w, b), layer in zip((("w1", "b1"), ("w2", "b2"), ("wp", "bp")), layers, strict=True):
        out[w] = layer.weight.detach().cpu().numpy().T.astype(np.float32).copy()
        out[b] = layer.bias.detach().cpu().numpy().astype(np.float32).copy()
    return out


def export(weights: dict[str, np.ndarray], folder: Path) -> None:
    """Write an agent folder: ``model.onnx`` (torch.onnx of the same MLP), ``model.npz``, the player."""
    import torch
    from torch import nn

    class Exported(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.l1, self.l2, self.head = (nn.Linear(*weights[k].shape) for k in ("w1", "w2", "wp"))
            for layer, (w, b) in zip(
                (self.l1, self.l2, self.head), (("w1", "b1"), ("w2", "b2"), ("wp", "bp"))
            ):
                layer.weight.data = torch.from_numpy(weights[w].T.copy())
                layer.bias.data = torch.from_numpy(weights[b].copy())

        def forward(self, observation, action_mask):
            x = observation.reshape(observation.shape[0], -1)
            logits = self.head(torch.relu(self.l2(torch.relu(self.l1(x)))))
            return torch.where(action_mask > 0, logits, torch.full_like(logits, -1e9))

    folder.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():  # the torch.export-based exporter needs onnxscript: the legacy one
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            Exported().eval(),
            (torch.zeros(1, 6, 7, 2), torch.ones(1, 7)),
            str(folder / "model.onnx"),
            input_names=["observation", "action_mask"],
            output_names=["logits"],
            dynamic_axes={"observation": {0: "batch"}, "action_mask": {0: "batch"}, "logits": {0: "batch"}},
            dynamo=False,
        )
    np.savez(folder / "model.npz", **weights)
    if folder.resolve() != HERE:
        for name in AGENT_FILES:
            shutil.copy(HERE / name, folder / name)


# ------------------------------------------------------------------------------------------ training


def build_config(args: argparse.Namespace):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

    env_config = {
        "server": args.server,
        "cache": args.cache,
        "opponents": [str(f) for f in (args.opponent or [REPO / "example_players" / "random"])],
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
    from rl_arena_client.api import Client, load_config
    from rl_arena_client.submission import CheckpointSubmitter

    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []

    def log(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    submitter = None
    if args.submit_every:
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
    started = time.process_time()
    wall = time.monotonic()
    ray.init(
        address=args.address,
        num_cpus=None if args.address else max(1, args.env_runners + 1),
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "client")])}},
    )
    algo = build_config(args).build_algo()
    steps = snapshots = submitted = iterations = 0
    try:
        while steps < args.steps and time.process_time() - started < args.cpu_minutes * 60:
            result = algo.train()
            iterations += 1
            steps = int(result["num_env_steps_sampled_lifetime"])
            module = algo.get_module()
            if args.snapshot_every and steps // args.snapshot_every > snapshots:
                snapshots = steps // args.snapshot_every
                weights = policy_weights(module)
                name = f"self-{steps}"
                _each_env(algo, lambda env, n=name, w=weights: env.add_snapshot(n, w))
            if submitter is not None and steps // args.submit_every > submitted:
                submitted = steps // args.submit_every
                folder = out / "checkpoints" / f"step-{steps}"
                export(policy_weights(module), folder)
                submitter.submit(folder, steps)
            if submitter is not None:
                submitter.poll()
            if iterations % args.log_every == 0:
                log(f"iteration {iterations}: {steps} steps, {time.process_time() - started:.0f} CPU s")
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
        "cpu_seconds": round(time.process_time() - started, 1),
        "wall_seconds": round(time.monotonic() - wall, 1),
        "league": {n: {"score": round(s / g, 3), "games": int(g)} for n, (s, g) in league.items() if g},
    }
    log(f"trained {steps} steps in {report['cpu_seconds']} CPU s ({report['wall_seconds']} s wall)")
    export(weights, out)
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
    p.add_argument("--quick", action="store_true", help="two small iterations, for the tests")
    p.add_argument("--out", default=str(HERE), help="output folder (default: this folder)")
    p.add_argument("--server", help="train against this arena's public agents (else local folders)")
    p.add_argument("--cache", default=str(Path.home() / ".cache" / "rl-arena"), help="fetched agents")
    p.add_argument("--opponent", action="append", help="a local agent folder (repeatable)")
    p.add_argument("--minimax-depth", type=int, default=2, help="in-process minimax opponent (0: none)")
    p.add_argument("--no-bwrap", action="store_true", help="run opponents without bubblewrap")
    p.add_argument("--address", help="a Ray cluster to join ('auto' on its head); default: a local Ray")
    p.add_argument(
        "--env-runners", type=int, default=0, help="remote env runners (0: sample in this process)"
    )
    p.add_argument("--cpu-minutes", type=float, default=10.0, help="budget: this process's CPU time")
    p.add_argument("--steps", type=int, default=10_000_000, help="budget: environment steps")
    p.add_argument("--batch", type=int, default=2000, help="steps per training iteration")
    p.add_argument("--minibatch", type=int, default=250)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--gamma", type=float, default=0.97)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--snapshot-every", type=int, default=10_000, help="self-play snapshot (0: none)")
    p.add_argument("--pool-size", type=int, default=8, help="self-play snapshots kept")
    p.add_argument("--submit-every", type=int, default=0, help="submit a checkpoint every N steps")
    p.add_argument("--name", default="rllib-connect-four", help="the competitor's name")
    p.add_argument("--public", action="store_true", help="submit as a public agent")
    p.add_argument("--poll", type=float, default=30.0, help="seconds between checks of the submissions")
    p.add_argument("--wait-rating", type=float, default=0.0, help="at the end, wait up to S s for a rating")
    p.add_argument("--log-every", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.quick:
        args.steps, args.batch, args.minibatch, args.epochs = 400, 200, 100, 1
        args.snapshot_every, args.log_every = 200, 1
    return args


if __name__ == "__main__":
    train(parse_args())
