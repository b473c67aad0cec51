"""The Connect Four player of the training examples (``example_players/train_sb3_connect_four``,
``train_rllib_connect_four``): an agent file of its own, copied as ``player.py`` into every exported
checkpoint (``rl_arena_client.training.export_mlp``), needing numpy and optionally onnxruntime only.

The policy network (84 -> 128 -> 128 -> 7, ReLU: the trainer's policy MLP and its action head) reads the
two (6, 7) planes "my pieces" / "opponent pieces" and returns one logit per column; the player plays the
legal column with the highest logit. ``model.onnx`` (exported by ``torch.onnx``) runs on ONNX Runtime, which
``requirements.txt`` declares and the arena installs when it builds the agent; ``model.npz`` holds the same
weights for numpy, used when onnxruntime or ``model.onnx`` is missing (a checkpoint for an arena that
installs no packages holds ``model.npz`` only). torch and Ray are needed only to train, never to play.
"""

from __future__ import annotations

import os
import sys

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))


def planes(board: np.ndarray) -> np.ndarray:
    """(6, 7, 2) float32 planes from an arena observation (1 mine, -1 opponent, 0 empty; row 0 = top)."""
    board = np.asarray(board)
    return np.stack([board == 1, board == -1], axis=-1).astype(np.float32)


class NumpyPolicy:
    """The network evaluated with numpy from ``model.npz`` (w1, b1, w2, b2, wp, bp)."""

    def __init__(self, path: str) -> None:
        with np.load(path) as data:
            self.w = {k: data[k].astype(np.float32) for k in ("w1", "b1", "w2", "b2", "wp", "bp")}

    def logits(self, x: np.ndarray) -> np.ndarray:
        h = np.maximum(x.reshape(len(x), -1) @ self.w["w1"] + self.w["b1"], 0.0)
        h = np.maximum(h @ self.w["w2"] + self.w["b2"], 0.0)
        return h @ self.w["wp"] + self.w["bp"]


class OnnxPolicy:
    """The network evaluated by onnxruntime from ``model.onnx`` (inputs observation, action_mask)."""

    def __init__(self, path: str) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.where = f"onnxruntime {onnxruntime.__version__}"

    def logits(self, x: np.ndarray) -> np.ndarray:
        mask = np.ones((len(x), 7), dtype=np.float32)
        return self.session.run(["logits"], {"observation": x.astype(np.float32), "action_mask": mask})[0]


def load_policy(folder: str = _HERE) -> NumpyPolicy | OnnxPolicy:
    """``model.onnx`` on onnxruntime when both are there, else the numpy copy in ``model.npz``."""
    onnx_path = os.path.join(folder, "model.onnx")
    if os.path.exists(onnx_path):
        try:
            return OnnxPolicy(onnx_path)
        except ImportError:
            print("onnxruntime is not installed: playing model.npz with numpy", file=sys.stderr)
    return NumpyPolicy(os.path.join(folder, "model.npz"))


class Player:
    """Plays the legal column with the highest logit."""

    def __init__(self, train_mode: bool = False, folder: str = _HERE) -> None:
        self.policy = load_policy(folder)
        where = getattr(self.policy, "where", f"numpy {np.__version__}")
        print(f"{os.path.basename(folder)}: policy on {where}", file=sys.stderr)

    def start(self, state, valid_actions) -> int:
        return self._act(state, valid_actions)

    def step(self, state, valid_actions, prev_reward) -> int:
        return self._act(state, valid_actions)

    def end(self, state, prev_reward) -> None:
        """The policy does not learn during duels."""

    def _act(self, state, valid_actions) -> int:
        legal = [int(a) for a in np.asarray(valid_actions).ravel()]
        logits = self.policy.logits(planes(state)[None])[0]
        return max(legal, key=lambda col: logits[col])
