"""Connect Four player driven by a small policy network trained by ``train.py`` (self-play + PFSP).

The network (84 -> 128 -> 128 -> 7, ReLU) reads the two (6, 7) planes "my pieces" / "opponent pieces"
(the PettingZoo ``connect_four_v3`` layout) and returns one logit per column; the player plays the legal
column with the highest logit. The agent plays ``model.onnx`` through ONNX Runtime: ``requirements.txt``
declares ``onnxruntime``, which the arena installs when it builds the agent (wheels only, no network in
the build). ``model.npz`` holds the same weights for numpy; it is used only when asked for
(``load_policy(prefer_onnx=False)``, the benchmark's comparison) or when a folder has no ``model.onnx``.

Tactical safety (``SAFETY = True``): before asking the network, take a column that wins at once, else
block a column where the opponent would win at once. The network decides every other move;
``Player(safety=False)`` plays the network alone (the README reports both).
"""

from __future__ import annotations

import os
import sys

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
ROWS, COLS = 6, 7
SAFETY = True


def planes(board: np.ndarray) -> np.ndarray:
    """(6, 7, 2) float32 planes from an arena observation (1 mine, -1 opponent, 0 empty; row 0 = top)."""
    board = np.asarray(board)
    return np.stack([board == 1, board == -1], axis=-1).astype(np.float32)


def relu_mlp_logits(weights: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """Policy logits of the MLP for a batch ``x`` of flattened planes (N, 84)."""
    h = np.maximum(x @ weights["w1"] + weights["b1"], 0.0)
    h = np.maximum(h @ weights["w2"] + weights["b2"], 0.0)
    return h @ weights["wp"] + weights["bp"]


def _drop_row(board: np.ndarray, col: int) -> int:
    """Row where a piece dropped into ``col`` lands (-1 if the column is full)."""
    for row in range(ROWS - 1, -1, -1):
        if board[row, col] == 0:
            return row
    return -1


def _wins_with(board: np.ndarray, row: int, col: int, piece: int) -> bool:
    """Whether putting ``piece`` at (row, col) makes four in a line."""
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        n = 1
        for sign in (1, -1):
            r, c = row + sign * dr, col + sign * dc
            while 0 <= r < ROWS and 0 <= c < COLS and board[r, c] == piece:
                n += 1
                r, c = r + sign * dr, c + sign * dc
        if n >= 4:
            return True
    return False


def tactical_move(board: np.ndarray, legal: list[int]) -> int | None:
    """A column that wins now, else one that blocks the opponent's immediate win, else ``None``."""
    for piece in (1, -1):
        for col in legal:
            row = _drop_row(board, col)
            if row >= 0 and _wins_with(board, row, col, piece):
                return col
    return None


class _NumpyPolicy:
    """The network evaluated with numpy from ``model.npz``."""

    def __init__(self, path: str) -> None:
        with np.load(path) as data:
            self.weights = {k: data[k].astype(np.float32) for k in ("w1", "b1", "w2", "b2", "wp", "bp")}

    def logits(self, x: np.ndarray) -> np.ndarray:
        return relu_mlp_logits(self.weights, x.reshape(len(x), -1))


class _OnnxPolicy:
    """The network evaluated by onnxruntime from ``model.onnx``."""

    def __init__(self, path: str) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])

    def logits(self, x: np.ndarray) -> np.ndarray:
        mask = np.ones((len(x), COLS), dtype=np.float32)
        return self.session.run(["logits"], {"observation": x.astype(np.float32), "action_mask": mask})[0]


def load_policy(folder: str = _HERE, prefer_onnx: bool = True) -> _NumpyPolicy | _OnnxPolicy:
    """The trained policy in ``folder``: ONNX via onnxruntime if possible, else the numpy npz."""
    onnx_path = os.path.join(folder, "model.onnx")
    if prefer_onnx and os.path.exists(onnx_path):
        try:
            return _OnnxPolicy(onnx_path)
        except ImportError as exc:
            raise ImportError(
                "model.onnx needs onnxruntime (requirements.txt declares it; locally: pip install "
                "onnxruntime), or load_policy(prefer_onnx=False) for the numpy copy of the weights"
            ) from exc
    return _NumpyPolicy(os.path.join(folder, "model.npz"))


class Player:
    """Plays the legal column with the highest network logit (after the optional tactical safety)."""

    def __init__(self, train_mode: bool = False, safety: bool = SAFETY, folder: str = _HERE) -> None:
        self.train_mode = train_mode
        self.safety = safety
        self.policy = load_policy(folder)
        self.backend = "onnx" if isinstance(self.policy, _OnnxPolicy) else "numpy"
        if self.backend == "onnx":
            import onnxruntime

            where = f"onnxruntime {onnxruntime.__version__}"
        else:
            where = f"numpy {np.__version__}"
        print(f"trained_connect_four: policy on {where}", file=sys.stderr)

    def start(self, state, valid_actions) -> int:
        """First move of a match."""
        return self._act(state, valid_actions)

    def step(self, state, valid_actions, prev_reward) -> int:
        """Every later move of a match."""
        return self._act(state, valid_actions)

    def end(self, state, prev_reward) -> None:
        """Match over; the policy does not learn during duels."""

    def _act(self, state, valid_actions) -> int:
        board = np.asarray(state)
        legal = [int(a) for a in np.asarray(valid_actions).ravel()]
        if self.safety:
            move = tactical_move(board, legal)
            if move is not None:
                return move
        logits = self.policy.logits(planes(board)[None])[0]
        return max(legal, key=lambda col: logits[col])
