"""Minimax example player: one alpha-beta search module per game, chosen from the observation shape.

| observation shape | game         | module              |
|-------------------|--------------|---------------------|
| (3, 3)            | tic-tac-toe  | tictactoe_ai.py     |
| (6, 7)            | connect four | connect_four_ai.py  |
| (17,)             | quarto       | quarto_ai.py        |

Self-contained: needs Python 3 and numpy only. The game modules are loaded from this folder by file
path, so the player works however the harness imports ``player.py`` (no ``sys.path`` assumptions).
Any other observation shape gets a uniformly random valid action.
"""

from __future__ import annotations

import importlib.util
import os
import random
import sys

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))

#: Per-move search budget in seconds. The platform allows 1 s per move; this leaves a wide margin for
#: a loaded machine, process start-up and message passing.
TIME_BUDGET = 0.2


def _load(name: str):
    """Import ``<name>.py`` from this folder under a name that cannot clash with other modules."""
    module_name = f"_minimax_example_{name}_{id(_HERE)}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, os.path.join(_HERE, f"{name}.py"))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {name}.py from {_HERE}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


class Player:
    """Detects the game from each observation's shape and asks that game's search for a move."""

    def __init__(self, train_mode: bool = False, time_budget: float = TIME_BUDGET) -> None:
        self.train_mode = train_mode
        self.time_budget = time_budget
        self._rng = random.Random(int.from_bytes(os.urandom(16), "big"))
        self._engines: dict[tuple[int, ...], object] = {}
        self.last_engine = None

    def start(self, state, valid_actions) -> int:
        """First move of a match."""
        return self._act(state, valid_actions)

    def step(self, state, valid_actions, prev_reward) -> int:
        """Every later move of a match."""
        return self._act(state, valid_actions)

    def end(self, state, prev_reward) -> None:
        """The match is over; the search keeps no per-match state worth resetting."""

    def _act(self, state, valid_actions) -> int:
        observation = np.asarray(state)
        actions = [int(a) for a in np.asarray(valid_actions).ravel()]
        engine = self._engine_for(observation.shape)
        self.last_engine = engine
        if engine is None:
            return self._rng.choice(actions)
        return int(engine.choose(observation, actions))

    def _engine_for(self, shape: tuple[int, ...]):
        if shape not in self._engines:
            if shape == (3, 3):
                engine = _load("tictactoe_ai").TicTacToeAI(rng=self._rng)
            elif shape == (6, 7):
                engine = _load("connect_four_ai").ConnectFourAI(time_budget=self.time_budget)
            elif shape == (17,):
                engine = _load("quarto_ai").QuartoAI(time_budget=self.time_budget, rng=self._rng)
            else:
                engine = None
            self._engines[shape] = engine
        return self._engines[shape]
