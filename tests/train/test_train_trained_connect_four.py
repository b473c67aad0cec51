"""The committed trained Connect Four agent, and train.py --quick producing a working one."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import RANDOM, TRAINED

from environments import get_game
from run_duel.api import LaunchSpec, get_sandbox, play_duel, validate_duel_json

MATCHES = 40


def load_player_module(folder: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, folder / "player.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def play_against_random(player, games: int, rng: np.random.Generator) -> float:
    """Score of ``player`` (a Player object) against uniform random moves, in process, real rules."""
    game = get_game("connect-four")
    total = 0.0
    for g in range(games):
        state, seat = game.initial_state(), g % 2
        while not game.is_over(state):
            legal = game.legal_actions(state)
            if game.to_move(state) == seat:
                action = player.step(game.observation(state, seat), np.array(legal), 0)
            else:
                action = int(rng.choice(legal))
            state = game.apply(state, action)
        total += (game.rewards(state)[seat] + 1) / 2
    return total / games


def test_committed_weights_are_small():
    assert (TRAINED / "model.npz").stat().st_size < 1_000_000
    assert (TRAINED / "model.onnx").stat().st_size < 1_000_000


def test_committed_agent_beats_random_in_95_percent_of_referee_matches(tmp_path):
    # Without model.onnx the player takes the numpy path, the one the arena's numpy-only image runs.
    for name in ("player.py", "model.npz"):
        shutil.copyfile(TRAINED / name, tmp_path / name)
    result = play_duel(
        "connect-four",
        get_sandbox("local"),
        LaunchSpec(str(tmp_path)),
        LaunchSpec(str(RANDOM)),
        matches=MATCHES,
        record_states=False,
    )
    validate_duel_json(result)
    assert result["player_1_errors"] == result["other_errors"] == 0
    print(f"trained (numpy path, with safety) vs random: {result['player_1_score']}/{MATCHES}")
    assert result["player_1_score"] >= 0.95 * MATCHES


def test_network_alone_does_most_of_the_work_against_random():
    player = load_player_module(TRAINED, "_committed_trained_c4").Player(safety=False)
    score = play_against_random(player, 40, np.random.default_rng(3))
    print(f"network alone vs random: {score:.2f}")
    assert score >= 0.8


def test_onnx_and_numpy_backends_agree():
    pytest.importorskip("onnxruntime")
    module = load_player_module(TRAINED, "_committed_trained_c4_backends")
    onnx_policy, numpy_policy = module.load_policy(), module.load_policy(prefer_onnx=False)
    assert type(onnx_policy).__name__ == "_OnnxPolicy"
    x = (np.random.default_rng(0).random((8, 6, 7, 2)) < 0.3).astype(np.float32)
    assert np.allclose(onnx_policy.logits(x), numpy_policy.logits(x), atol=1e-4)


def test_train_quick_writes_loadable_onnx_npz_and_a_working_player(tmp_path):
    script = TRAINED / "train.py"
    done = subprocess.run(
        [sys.executable, str(script), "--quick", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for name in ("model.npz", "model.onnx", "player.py", "training.json"):
        assert (tmp_path / name).is_file(), name
    onnx = pytest.importorskip("onnx")
    onnx.checker.check_model(onnx.load(str(tmp_path / "model.onnx")))
    module = load_player_module(tmp_path, "_quick_trained_c4")
    numpy_player = module.Player(safety=False)
    numpy_player.policy = module.load_policy(str(tmp_path), prefer_onnx=False)
    assert play_against_random(numpy_player, 4, np.random.default_rng(1)) >= 0
    if importlib.util.find_spec("onnxruntime"):
        assert module.Player().backend == "onnx"
