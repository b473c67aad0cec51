"""A tiny torch policy for Connect Four, as an rl-arena author would ship it with a conda environment.yml
(tests/docker/test_torch_stack.py): a fixed random network scores the columns, the best legal one is played.
Accepts the board as this platform sends it (6x7) or as a flat vector (the first 42 values are the cells)."""

import sys

import numpy as np
import torch

print("torch", torch.__version__, "numpy", np.__version__, file=sys.stderr, flush=True)


class Player:
    def __init__(self, train_mode=False):
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.Linear(42, 16), torch.nn.ReLU(), torch.nn.Linear(16, 7))

    def _act(self, state, valid_actions):
        cells = [float(v) for v in np.asarray(state).reshape(-1).tolist()[:42]]
        with torch.no_grad():
            scores = self.net(torch.tensor(cells)).tolist()
        return max((int(a) for a in valid_actions), key=lambda a: scores[a])

    def start(self, state, valid_actions):
        return self._act(state, valid_actions)

    def step(self, state, valid_actions, prev_reward):
        return self._act(state, valid_actions)

    def end(self, state, prev_reward):
        pass
