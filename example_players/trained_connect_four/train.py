"""Train the Connect Four policy of ``player.py`` on a CPU: PPO-lite in numpy, league of past selves, PFSP.

Run from the repository root (needs the ``train`` extra: pettingzoo, gymnasium, onnx; onnxruntime to
verify the export)::

    .venv/bin/python example_players/trained_connect_four/train.py            # full run (~10 min)
    .venv/bin/python example_players/trained_connect_four/train.py --quick    # a few iterations (CI)
    .venv/bin/python example_players/trained_connect_four/train.py --out /tmp/c4 --minutes 3

How it works:

- Games are played in ``environments.pettingzoo.connect_four_env()``, i.e. the arena's own rules.
- The learner is an MLP (84 -> 128 -> 128 -> 7 logits + a tanh value head) trained with a clipped
  policy-gradient objective (PPO-lite: a few epochs of minibatch Adam over each batch of games), masked
  softmax over legal columns, entropy bonus, Monte-Carlo returns and left-right mirrored copies of
  every sample. Everything is numpy.
- Opponents: a league holding ``random``, a depth-2 ``minimax`` (example_players/minimax at a tiny
  budget) and frozen snapshots of the learner (one added every ``--snapshot-every`` iterations, at most
  ``--pool-size`` kept). A share of the games (``--self-play``) is against the current weights; the rest
  picks an opponent by prioritized fictitious self-play: weight ``f(x) = x**2`` (the "hard" variant)
  where ``x`` is the learner's estimated probability of not winning against it (loss + half a draw,
  an exponential moving average), plus a small floor so no opponent is forgotten. Each game opens
  with 0 to 2 random plies, so the learner cannot just memorise one winning line against the
  deterministic minimax.
- Output (``--out``, default: this folder): ``model.npz`` (numpy weights), ``model.onnx`` (the same
  network as Gemm/Relu nodes with the action mask applied, checked with onnxruntime when installed),
  ``player.py`` (copied from this folder) and ``training.json`` (numbers of the run).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from environments.pettingzoo import connect_four_env  # noqa: E402

COLS = 7
INPUTS = 6 * 7 * 2
HIDDEN = 128
PARAMS = ("w1", "b1", "w2", "b2", "wp", "bp", "wv", "bv")
POLICY_PARAMS = PARAMS[:6]


def _load_module(name: str, path: Path):
    """Import a file of an example player by path (they are self-contained, not packages)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


PLAYER = _load_module("_trained_c4_player", HERE / "player.py")
MINIMAX = _load_module("_trained_c4_minimax", REPO / "example_players" / "minimax" / "connect_four_ai.py")


# --------------------------------------------------------------------------------------------- network
def init_params(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """He-initialised weights; small output layers so the first policy is close to uniform."""

    def dense(n_in: int, n_out: int, scale: float) -> np.ndarray:
        return (rng.standard_normal((n_in, n_out)) * scale * np.sqrt(2.0 / n_in)).astype(np.float32)

    return {
        "w1": dense(INPUTS, HIDDEN, 1.0),
        "b1": np.zeros(HIDDEN, np.float32),
        "w2": dense(HIDDEN, HIDDEN, 1.0),
        "b2": np.zeros(HIDDEN, np.float32),
        "wp": dense(HIDDEN, COLS, 0.1),
        "bp": np.zeros(COLS, np.float32),
        "wv": dense(HIDDEN, 1, 0.1),
        "bv": np.zeros(1, np.float32),
    }


def forward(p: dict[str, np.ndarray], x: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Logits (N, 7), values (N,) and the activations the backward pass needs."""
    z1 = x @ p["w1"] + p["b1"]
    h1 = np.maximum(z1, 0.0)
    z2 = h1 @ p["w2"] + p["b2"]
    h2 = np.maximum(z2, 0.0)
    logits = h2 @ p["wp"] + p["bp"]
    value = np.tanh(h2 @ p["wv"] + p["bv"])[:, 0]
    return logits, value, (x, z1, h1, z2, h2)


def masked_softmax(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Softmax over the legal entries of each row (``mask`` 1 = legal)."""
    z = np.where(mask > 0, logits, -1e9)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z) * (mask > 0)
    return e / e.sum(axis=-1, keepdims=True)


class Adam:
    """Adam over a dict of arrays."""

    def __init__(self, params: dict[str, np.ndarray], lr: float) -> None:
        self.lr = lr
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.t = 0

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        self.t += 1
        for k, g in grads.items():
            self.m[k] = 0.9 * self.m[k] + 0.1 * g
            self.v[k] = 0.999 * self.v[k] + 0.001 * g * g
            m_hat = self.m[k] / (1 - 0.9**self.t)
            v_hat = self.v[k] / (1 - 0.999**self.t)
            params[k] -= (self.lr * m_hat / (np.sqrt(v_hat) + 1e-8)).astype(np.float32)


def ppo_gradients(
    p: dict[str, np.ndarray], batch: dict[str, np.ndarray], clip: float, ent_coef: float, vf_coef: float
) -> dict[str, np.ndarray]:
    """Gradients of the clipped surrogate + value + entropy loss on one minibatch."""
    x, mask, act, old_logp, ret, adv = (batch[k] for k in ("x", "mask", "act", "logp", "ret", "adv"))
    n = len(x)
    logits, value, (x, z1, h1, z2, h2) = forward(p, x)
    pi = masked_softmax(logits, mask)
    rows = np.arange(n)
    logp = np.log(pi[rows, act] + 1e-12)
    ratio = np.exp(logp - old_logp)
    active = ~(((adv > 0) & (ratio > 1 + clip)) | ((adv < 0) & (ratio < 1 - clip)))
    onehot = np.zeros_like(pi)
    onehot[rows, act] = 1.0
    # d(-ratio*adv)/dlogits = -adv*ratio*(onehot - pi), zero where the clip is active
    d_logits = (-(adv * ratio * active)[:, None]) * (onehot - pi)
    # entropy bonus: d(-H)/dz_j = pi_j (log pi_j + H)
    log_pi = np.where(pi > 0, np.log(pi + 1e-12), 0.0)
    entropy = -(pi * log_pi).sum(axis=1, keepdims=True)
    d_logits += ent_coef * pi * (log_pi + entropy)
    d_logits /= n
    d_value = (vf_coef * 2.0 * (value - ret) * (1.0 - value**2) / n)[:, None]
    g = {
        "wp": h2.T @ d_logits,
        "bp": d_logits.sum(0),
        "wv": h2.T @ d_value,
        "bv": d_value.sum(0),
    }
    d_h2 = (d_logits @ p["wp"].T + d_value @ p["wv"].T) * (z2 > 0)
    g["w2"], g["b2"] = h1.T @ d_h2, d_h2.sum(0)
    d_h1 = (d_h2 @ p["w2"].T) * (z1 > 0)
    g["w1"], g["b1"] = x.T @ d_h1, d_h1.sum(0)
    return {k: v.astype(np.float32) for k, v in g.items()}


# ------------------------------------------------------------------------------------------- opponents
class NetAgent:
    """Samples (or, greedy, takes the argmax) from a policy network."""

    def __init__(self, params: dict[str, np.ndarray], rng: np.random.Generator, greedy: bool = False):
        self.params = params
        self.rng = rng
        self.greedy = greedy

    def act(self, obs: dict[str, np.ndarray]) -> tuple[int, float]:
        x = obs["observation"].reshape(1, -1).astype(np.float32)
        logits = PLAYER.relu_mlp_logits(self.params, x)  # the very function player.py uses
        pi = masked_softmax(logits, obs["action_mask"][None])[0]
        a = int(np.argmax(pi)) if self.greedy else int(self.rng.choice(COLS, p=pi))
        return a, float(np.log(pi[a] + 1e-12))


class RandomAgent:
    """Uniform over the legal columns."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def act(self, obs: dict[str, np.ndarray]) -> tuple[int, float]:
        return int(self.rng.choice(np.flatnonzero(obs["action_mask"]))), 0.0


class MinimaxAgent:
    """example_players/minimax's Connect Four search at a small depth and time budget."""

    def __init__(self, depth: int, budget: float) -> None:
        self.engine = MINIMAX.ConnectFourAI(time_budget=budget, max_depth=depth)

    def act(self, obs: dict[str, np.ndarray]) -> tuple[int, float]:
        o = obs["observation"]
        board = o[:, :, 0].astype(np.int64) - o[:, :, 1]
        return int(self.engine.choose(board, [int(a) for a in np.flatnonzero(obs["action_mask"])])), 0.0


class SafetyAgent:
    """The shipped player's behaviour: 1-ply tactical safety in front of a greedy network."""

    def __init__(self, net: NetAgent) -> None:
        self.net = net

    def act(self, obs: dict[str, np.ndarray]) -> tuple[int, float]:
        o = obs["observation"]
        board = o[:, :, 0].astype(np.int64) - o[:, :, 1]
        move = PLAYER.tactical_move(board, [int(a) for a in np.flatnonzero(obs["action_mask"])])
        return (move, 0.0) if move is not None else self.net.act(obs)


# ---------------------------------------------------------------------------------------------- league
@dataclass
class Opponent:
    """A league member and the learner's estimated probability of not winning against it."""

    name: str
    agent: object
    p_not_win: float = 0.5
    games: int = 0


@dataclass
class League:
    """Opponent pool with PFSP selection (weights ``x**2 + floor``, x = P(learner does not win))."""

    members: list[Opponent] = field(default_factory=list)
    max_snapshots: int = 12
    floor: float = 0.02
    ema: float = 0.05

    def weights(self) -> np.ndarray:
        x = np.array([m.p_not_win for m in self.members])
        w = x**2 + self.floor
        return w / w.sum()

    def pick(self, rng: np.random.Generator) -> Opponent:
        return self.members[int(rng.choice(len(self.members), p=self.weights()))]

    def record(self, opponent: Opponent, learner_score: float) -> None:
        opponent.games += 1
        opponent.p_not_win += self.ema * ((1.0 - learner_score) - opponent.p_not_win)

    def add_snapshot(self, name: str, agent: object) -> None:
        snapshots = [m for m in self.members if m.name.startswith("snapshot")]
        if len(snapshots) >= self.max_snapshots:
            self.members.remove(snapshots[0])
        self.members.append(Opponent(name, agent))


# ----------------------------------------------------------------------------------------------- games
def play_game(
    env, agents: dict[str, object], learners: tuple[str, ...], gamma: float, opening_plies: int = 0
) -> tuple[float, list]:
    """Play one game in the PettingZoo env; return ``(score of player_0, samples)``.

    Samples are ``(obs, mask, action, logp, discounted final reward)`` for every seat in ``learners``.
    The first ``opening_plies`` moves are uniformly random (diverse openings against deterministic
    opponents in evaluation).
    """
    env.reset()
    moves: dict[str, list] = {seat: [] for seat in learners}
    final = {}
    ply = 0
    rng = np.random.default_rng()
    for agent in env.agent_iter():
        obs, reward, term, trunc, _ = env.last()
        if term or trunc:
            final[agent] = reward
            env.step(None)
            continue
        if ply < opening_plies:
            action, logp = int(rng.choice(np.flatnonzero(obs["action_mask"]))), 0.0
        else:
            action, logp = agents[agent].act(obs)
            if agent in moves:
                moves[agent].append((obs["observation"], obs["action_mask"], action, logp))
        ply += 1
        env.step(action)
    score0 = (final["player_0"] + 1) / 2.0
    samples = []
    for seat, seat_moves in moves.items():
        n = len(seat_moves)
        for i, (o, m, a, lp) in enumerate(seat_moves):
            samples.append((o, m, a, lp, final[seat] * gamma ** (n - 1 - i)))
    return score0, samples


def match_score(env, mine: object, theirs: object, games: int, opening_plies: int = 0) -> float:
    """Average score (win 1, draw 0.5) of ``mine`` over ``games`` games, seats alternating."""
    total = 0.0
    for g in range(games):
        if g % 2 == 0:
            s0, _ = play_game(env, {"player_0": mine, "player_1": theirs}, (), 1.0, opening_plies)
            total += s0
        else:
            s0, _ = play_game(env, {"player_0": theirs, "player_1": mine}, (), 1.0, opening_plies)
            total += 1.0 - s0
    return total / games


def to_batch(samples: list, params: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Stack samples, add their left-right mirror images, compute advantages with the value head."""
    obs = np.stack([s[0] for s in samples]).astype(np.float32)
    mask = np.stack([s[1] for s in samples]).astype(np.float32)
    act = np.array([s[2] for s in samples])
    logp = np.array([s[3] for s in samples], np.float32)
    ret = np.array([s[4] for s in samples], np.float32)
    obs = np.concatenate([obs, obs[:, :, ::-1, :]])
    mask = np.concatenate([mask, mask[:, ::-1]])
    act = np.concatenate([act, COLS - 1 - act])
    logp = np.concatenate([logp, logp])  # the mirrored policy is nearly symmetric: good enough for PPO-lite
    ret = np.concatenate([ret, ret])
    x = obs.reshape(len(obs), -1)
    _, value, _ = forward(params, x)
    adv = ret - value
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    return {"x": x, "mask": mask, "act": act, "logp": logp, "ret": ret, "adv": adv.astype(np.float32)}


# ---------------------------------------------------------------------------------------------- export
def export_onnx(params: dict[str, np.ndarray], path: Path) -> None:
    """Write the policy as ONNX: inputs observation (N,6,7,2) and action_mask (N,7); output logits."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    init = [numpy_helper.from_array(params[k].astype(np.float32), name=k) for k in POLICY_PARAMS]
    init.append(numpy_helper.from_array(np.array([-1, INPUTS], np.int64), name="flat_shape"))
    init.append(numpy_helper.from_array(np.array(1.0, np.float32), name="one"))
    init.append(numpy_helper.from_array(np.array(1e9, np.float32), name="big"))
    nodes = [
        helper.make_node("Reshape", ["observation", "flat_shape"], ["x"]),
        helper.make_node("Gemm", ["x", "w1", "b1"], ["z1"]),
        helper.make_node("Relu", ["z1"], ["h1"]),
        helper.make_node("Gemm", ["h1", "w2", "b2"], ["z2"]),
        helper.make_node("Relu", ["z2"], ["h2"]),
        helper.make_node("Gemm", ["h2", "wp", "bp"], ["raw_logits"]),
        # masked logits = raw + (mask - 1) * 1e9: illegal columns never win the argmax
        helper.make_node("Sub", ["action_mask", "one"], ["mask_minus_one"]),
        helper.make_node("Mul", ["mask_minus_one", "big"], ["penalty"]),
        helper.make_node("Add", ["raw_logits", "penalty"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes,
        "trained_connect_four_policy",
        [
            helper.make_tensor_value_info("observation", TensorProto.FLOAT, ["N", 6, 7, 2]),
            helper.make_tensor_value_info("action_mask", TensorProto.FLOAT, ["N", COLS]),
        ],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", COLS])],
        init,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="rl-arena")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def verify_onnx(params: dict[str, np.ndarray], path: Path, rng: np.random.Generator) -> str:
    """Compare onnxruntime's logits with numpy's on random boards; return a status line."""
    try:
        import onnxruntime
    except ImportError:
        return "onnxruntime not installed: ONNX checked by onnx.checker only"
    obs = (rng.random((16, 6, 7, 2)) < 0.3).astype(np.float32)
    mask = np.ones((16, COLS), np.float32)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(["logits"], {"observation": obs, "action_mask": mask})[0]
    want, _, _ = forward(params, obs.reshape(16, -1))
    err = float(np.abs(got - want).max())
    if err > 1e-3:
        raise RuntimeError(f"ONNX export differs from numpy by {err}")
    return f"onnxruntime matches numpy (max |diff| {err:.1e})"


def save_outputs(params: dict[str, np.ndarray], out: Path, report: dict, rng: np.random.Generator) -> None:
    """Write model.npz, model.onnx, player.py, requirements.txt and training.json into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / "model.npz", **{k: params[k].astype(np.float32) for k in POLICY_PARAMS})
    export_onnx(params, out / "model.onnx")
    report["onnx_check"] = verify_onnx(params, out / "model.onnx", rng)
    for name in ("player.py", "requirements.txt"):  # a ready submission: onnxruntime is declared
        if (out / name).resolve() != (HERE / name).resolve():
            shutil.copyfile(HERE / name, out / name)
    (out / "training.json").write_text(json.dumps(report, indent=2) + "\n")


# ---------------------------------------------------------------------------------------------- main
def train(args: argparse.Namespace) -> dict:
    """Run the training loop and the final evaluation; return the report."""
    rng = np.random.default_rng(args.seed)
    env = connect_four_env()
    params = init_params(rng)
    opt = Adam(params, args.lr)
    league = League(max_snapshots=args.pool_size)
    league.members.append(Opponent("random", RandomAgent(rng)))
    league.members.append(Opponent("minimax-d2", MinimaxAgent(depth=2, budget=0.01)))
    learner = NetAgent(params, rng)
    started = time.monotonic()
    deadline = started + args.minutes * 60
    cpu_started = time.process_time()
    cpu_deadline = cpu_started + (args.cpu_minutes * 60 if args.cpu_minutes is not None else float("inf"))
    iteration = games = 0
    log = []
    while (
        time.monotonic() < deadline
        and time.process_time() < cpu_deadline
        and (args.iterations is None or iteration < args.iterations)
    ):
        samples = []
        for g in range(args.games_per_iter):
            seat = "player_0" if g % 2 == 0 else "player_1"
            other = "player_1" if seat == "player_0" else "player_0"
            if rng.random() < args.self_play:  # against the current weights: learn from both seats
                opponent, agent, learners = None, learner, (seat, other)
            else:
                opponent = league.pick(rng)
                agent, learners = opponent.agent, (seat,)
            opening = int(rng.integers(0, args.max_opening_plies + 1))  # no single line to overfit
            score0, game_samples = play_game(
                env, {seat: learner, other: agent}, learners, args.gamma, opening
            )
            samples += game_samples
            if opponent is not None:
                league.record(opponent, score0 if seat == "player_0" else 1.0 - score0)
            games += 1
        batch = to_batch(samples, params)
        n = len(batch["x"])
        for _ in range(args.epochs):
            order = rng.permutation(n)
            for start in range(0, n, args.minibatch):
                idx = order[start : start + args.minibatch]
                grads = ppo_gradients(params, {k: v[idx] for k, v in batch.items()}, 0.2, args.ent_coef, 0.5)
                opt.step(params, grads)
        iteration += 1
        if iteration % args.snapshot_every == 0:
            frozen = {k: v.copy() for k, v in params.items()}
            league.add_snapshot(f"snapshot-{iteration}", NetAgent(frozen, rng))
        if iteration % args.log_every == 0:
            line = {
                "iteration": iteration,
                "games": games,
                "seconds": round(time.monotonic() - started, 1),
                "league": {m.name: round(1 - m.p_not_win, 2) for m in league.members},
            }
            log.append(line)
            print(json.dumps(line), flush=True)
    train_seconds = time.monotonic() - started
    report = {
        "mode": "quick" if args.quick else "full",
        "iterations": iteration,
        "games": games,
        "train_seconds": round(train_seconds, 1),
        "train_cpu_seconds": round(time.process_time() - cpu_started, 1),
        "network": f"{INPUTS}-{HIDDEN}-{HIDDEN}-{COLS} MLP + value head",
        **evaluate(params, env, rng, args.eval_games),
        "league_at_end": {m.name: round(1 - m.p_not_win, 2) for m in league.members},
        "log": log,
    }
    save_outputs(params, Path(args.out), report, rng)
    return report


def evaluate(params: dict[str, np.ndarray], env, rng: np.random.Generator, games: int) -> dict:
    """Win rates of the greedy network, alone and behind the tactical safety, against the baselines.

    Against the deterministic minimax the first two plies are random, so the games differ.
    """
    greedy = NetAgent(params, rng, greedy=True)
    safe = SafetyAgent(greedy)
    few = max(2, games // 5)
    return {
        "eval_games_vs_random": games,
        "eval_games_vs_minimax": few,
        "win_rate_vs_random_network_only": match_score(env, greedy, RandomAgent(rng), games),
        "win_rate_vs_random_with_safety": match_score(env, safe, RandomAgent(rng), games),
        "win_rate_vs_minimax_depth2_network_only": match_score(env, greedy, MinimaxAgent(2, 0.01), few, 2),
        "win_rate_vs_minimax_depth2_with_safety": match_score(env, safe, MinimaxAgent(2, 0.01), few, 2),
        "win_rate_vs_minimax_20ms_network_only": match_score(env, greedy, MinimaxAgent(42, 0.02), few, 2),
        "win_rate_vs_minimax_20ms_with_safety": match_score(env, safe, MinimaxAgent(42, 0.02), few, 2),
        "note": "win rate = score (win 1, draw 0.5) averaged over games with alternating first move",
    }


def load_params(folder: Path) -> dict[str, np.ndarray]:
    """The policy weights of ``folder/model.npz``."""
    with np.load(folder / "model.npz") as data:
        return {k: data[k] for k in POLICY_PARAMS}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (``--quick`` shrinks everything for CI)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few iterations (< 60 s), for CI")
    parser.add_argument("--out", default=str(HERE), help="output folder (default: this folder)")
    parser.add_argument("--minutes", type=float, default=13.0, help="training wall-clock budget")
    parser.add_argument(
        "--cpu-minutes", type=float, default=None, help="training budget in this process's CPU time"
    )
    parser.add_argument("--iterations", type=int, default=None, help="stop after this many iterations")
    parser.add_argument("--games-per-iter", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--minibatch", type=int, default=256)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--gamma", type=float, default=0.97)
    parser.add_argument("--ent-coef", type=float, default=0.01)
    parser.add_argument("--self-play", type=float, default=0.3, help="share of games against itself")
    parser.add_argument("--snapshot-every", type=int, default=10)
    parser.add_argument("--pool-size", type=int, default=12, help="past versions kept in the league")
    parser.add_argument("--eval-games", type=int, default=200)
    parser.add_argument("--log-every", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--max-opening-plies", type=int, default=2, help="each training game opens with 0..N random plies"
    )
    parser.add_argument("--eval-only", action="store_true", help="only evaluate --out's model.npz")
    args = parser.parse_args(argv)
    if args.quick:
        args.iterations = args.iterations or 4
        args.games_per_iter = 16
        args.snapshot_every = 2
        args.log_every = 1
        args.eval_games = 20
    return args


def main(argv: list[str] | None = None) -> int:
    """Train, export and print the summary."""
    args = parse_args(argv)
    if args.eval_only:
        rng = np.random.default_rng(args.seed)
        print(
            json.dumps(
                evaluate(load_params(Path(args.out)), connect_four_env(), rng, args.eval_games), indent=2
            )
        )
        return 0
    report = train(args)
    summary = {k: v for k, v in report.items() if k not in ("log",)}
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
