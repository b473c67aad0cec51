"""PettingZoo AEC environments over the arena's own rules (optional: needs ``pip install .[train]``).

Each environment wraps exactly ``environments/<game>/rules.py`` (the rules the referee plays), so what an
agent learns here is what it meets in a duel::

    from environments.pettingzoo import connect_four_env
    env = connect_four_env()
    env.reset(seed=0)
    for agent in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        action = None if termination or truncation else int(np.flatnonzero(obs["action_mask"])[0])
        env.step(action)

- Agents ``"player_0"`` (seat 0, moves first) and ``"player_1"``.
- Observations are dicts ``{"observation": ..., "action_mask": int8 (num_actions,)}`` like PettingZoo
  classic. The mask is all zeros for the agent that is not to move and once the game is over.
  Connect Four: int8 (6, 7, 2), plane 0 = my pieces, plane 1 = the opponent's (row 0 = top), the
  ``connect_four_v3`` layout. Tic-tac-toe: int8 (3, 3, 2), same planes (row-major board, unlike
  ``tictactoe_v3``). Other games (Quarto, Leduc Hold'em, Goofspiel): the arena observation of
  ``rules.py`` as is; in games with private information it holds only what the agent may see.
- Chance (Leduc's deals, Goofspiel's prizes) is drawn from ``reset(seed=...)``.
- Simultaneous turns (Goofspiel) are played in the AEC way: ``player_0`` then ``player_1``, whose
  observation does not show ``player_0``'s choice of the same turn (the arena's rules guarantee it).
- Rewards: +1 win, -1 loss, 0 draw, given when the game ends (0 before).
- Illegal moves (``illegal_action``): ``"lose"`` (default) ends the game like the referee does — the
  offender gets -1, the other agent +1, ``info["illegal_action"]`` says why; ``"raise"`` raises
  ``IllegalActionError`` and leaves the game unchanged.
- ``render_mode``: ``"ansi"`` (``render()`` returns text) or ``"human"`` (prints it).

``pettingzoo`` and ``gymnasium`` are imported only when an environment is built, so ``environments``
keeps working without them.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from environments.base import Game, IllegalActionError, State
from environments.registry import get_game

AGENTS = ("player_0", "player_1")
ILLEGAL_POLICIES = ("lose", "raise")


def _planes(game: Game, state: State, seat: int) -> np.ndarray:
    """(rows, cols, 2) int8 planes from a board observation of 1 (mine) / -1 (theirs) / 0."""
    board = game.observation(state, seat)
    return np.stack([board == 1, board == -1], axis=-1).astype(np.int8)


def _observation_spec(game: Game) -> tuple[Any, Any, Any, Any]:
    """(function(state, seat) -> array, low, high, dtype) of the observation of ``game``."""
    sample = game.observation(game.initial_state(), 0)
    if hasattr(game, "pettingzoo_observation"):  # Connect Four: the connect_four_v3 layout
        return (lambda state, seat: game.pettingzoo_observation(state, seat)["observation"]), 0, 1, np.int8
    if game.slug == "tic-tac-toe":
        return (lambda state, seat: _planes(game, state, seat)), 0, 1, np.int8
    if game.slug == "quarto":
        return game.observation, -1, 15, sample.dtype
    if game.observation_bounds is not None:  # Leduc Hold'em, Goofspiel: the arena's int64 vector as is
        low, high = game.observation_bounds
        return game.observation, low, high, sample.dtype
    return (lambda state, seat: game.observation(state, seat).astype(np.float32)), -np.inf, np.inf, np.float32


@functools.cache
def _env_class() -> type:
    """Build the AECEnv subclass (imports pettingzoo and gymnasium on first use)."""
    try:
        from gymnasium import spaces
        from pettingzoo import AECEnv
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "environments.pettingzoo needs pettingzoo and gymnasium: pip install 'rl-arena[train]'"
        ) from exc

    class ArenaAECEnv(AECEnv):
        """A PettingZoo AEC environment playing one arena game with its exact rules."""

        def __init__(self, game: Game, illegal_action: str = "lose", render_mode: str | None = None) -> None:
            super().__init__()
            if illegal_action not in ILLEGAL_POLICIES:
                raise ValueError(f"illegal_action must be one of {ILLEGAL_POLICIES}, not {illegal_action!r}")
            if render_mode not in (None, "ansi", "human"):
                raise ValueError(f"render_mode must be None, 'ansi' or 'human', not {render_mode!r}")
            self.game = game
            self.illegal_action = illegal_action
            self.render_mode = render_mode
            self.metadata = {
                "name": f"rl_arena_{game.slug.replace('-', '_')}_v0",
                "render_modes": ["ansi", "human"],
                "is_parallelizable": False,
            }
            self._observe_fn, low, high, dtype = _observation_spec(game)
            shape = self._observe_fn(game.initial_state(), 0).shape
            self.possible_agents = list(AGENTS)
            self.observation_spaces = {
                agent: spaces.Dict(
                    {
                        "observation": spaces.Box(low=low, high=high, shape=shape, dtype=dtype),
                        "action_mask": spaces.Box(low=0, high=1, shape=(game.num_actions,), dtype=np.int8),
                    }
                )
                for agent in AGENTS
            }
            self.action_spaces: dict[str, Any] = {a: spaces.Discrete(game.num_actions) for a in AGENTS}
            self.state_json: State = game.initial_state()
            self._rng = np.random.default_rng()
            self.reset()

        def observation_space(self, agent: str) -> Any:
            """The observation space of ``agent`` (the same for both)."""
            return self.observation_spaces[agent]

        def action_space(self, agent: str) -> Any:
            """``Discrete(num_actions)``; use the action mask for the legal ones."""
            return self.action_spaces[agent]

        def reset(self, seed: int | None = None, options: dict | None = None) -> None:
            """Start a new game. Games with chance deal from ``seed`` (a fresh random one when ``None``);
            the others are deterministic and ignore it."""
            if seed is not None:
                self._rng = np.random.default_rng(seed)
            self.state_json = self.game.initial_state(int(self._rng.integers(2**31)))
            self.agents = list(AGENTS)
            self.rewards = dict.fromkeys(AGENTS, 0)
            self._cumulative_rewards = dict.fromkeys(AGENTS, 0)
            self.terminations = dict.fromkeys(AGENTS, False)
            self.truncations = dict.fromkeys(AGENTS, False)
            self.infos: dict[str, dict[str, Any]] = {agent: {} for agent in AGENTS}
            self.agent_selection = AGENTS[self.game.to_move(self.state_json)]

        def observe(self, agent: str) -> dict[str, np.ndarray]:
            """``{"observation", "action_mask"}`` of ``agent``; the mask is empty unless it is to move."""
            seat = AGENTS.index(agent)
            state = self.state_json
            mask = np.zeros(self.game.num_actions, dtype=np.int8)
            if not self.game.is_over(state) and self.game.to_move(state) == seat:
                mask[self.game.legal_actions(state)] = 1
            return {"observation": self._observe_fn(state, seat), "action_mask": mask}

        def step(self, action: int | None) -> None:
            """Play ``action`` for ``agent_selection`` (``None`` once that agent is terminated)."""
            agent = self.agent_selection
            if self.terminations[agent] or self.truncations[agent]:
                self._was_dead_step(action)
                return
            seat = AGENTS.index(agent)
            self._cumulative_rewards[agent] = 0
            self.rewards = dict.fromkeys(AGENTS, 0)
            try:
                if action is None:  # only a terminated agent may pass None
                    raise IllegalActionError(f"{agent} must play an action, not None")
                self.state_json = self.game.apply(self.state_json, action)
            except IllegalActionError as exc:
                if self.illegal_action == "raise":
                    raise
                self.rewards[agent] = -1
                self.rewards[AGENTS[1 - seat]] = 1
                self.infos[agent] = {"illegal_action": str(exc)}
                self.terminations = dict.fromkeys(AGENTS, True)
            else:
                if self.game.is_over(self.state_json):
                    r0, r1 = self.game.rewards(self.state_json)
                    self.rewards = {AGENTS[0]: int(r0), AGENTS[1]: int(r1)}
                    self.terminations = dict.fromkeys(AGENTS, True)
            if not self.terminations[agent]:
                self.agent_selection = AGENTS[self.game.to_move(self.state_json)]
            else:
                self.agent_selection = AGENTS[1 - seat]
            self._accumulate_rewards()
            if self.render_mode == "human":
                self.render()

        def render(self) -> str | None:
            """The state as text (``"ansi"``), printed too with ``"human"``."""
            if self.render_mode is None:
                return None
            text = _board_text(self.game, self.state_json)
            if self.render_mode == "human":
                print(text)
                return None
            return text

        def close(self) -> None:
            """Nothing to release."""

    return ArenaAECEnv


def _board_text(game: Game, state: State) -> str:
    """A plain-text picture of ``state`` (boards as grids, anything else as its JSON)."""
    board = state.get("board")
    if game.slug in ("connect-four", "tic-tac-toe") and board is not None:
        rows = board if isinstance(board[0], list) else [board[i : i + 3] for i in range(0, len(board), 3)]
        return "\n".join(" ".join(".XO"[v] for v in row) for row in rows)
    return str(state)


def env(slug: str, *, illegal_action: str = "lose", render_mode: str | None = None) -> Any:
    """A PettingZoo ``AECEnv`` for the registered game ``slug`` (e.g. ``"connect-four"``)."""
    return _env_class()(get_game(slug), illegal_action=illegal_action, render_mode=render_mode)


def connect_four_env(**kwargs: Any) -> Any:
    """Connect Four as a PettingZoo AEC env (``connect_four_v3`` observation layout)."""
    return env("connect-four", **kwargs)


def tic_tac_toe_env(**kwargs: Any) -> Any:
    """Tic-tac-toe as a PettingZoo AEC env ((3, 3, 2) planes)."""
    return env("tic-tac-toe", **kwargs)


def quarto_env(**kwargs: Any) -> Any:
    """Quarto as a PettingZoo AEC env (the arena's (17,) observation)."""
    return env("quarto", **kwargs)


def leduc_holdem_env(**kwargs: Any) -> Any:
    """Leduc Hold'em (a match of ten hands) as a PettingZoo AEC env (the arena's (16,) observation)."""
    return env("leduc-holdem", **kwargs)


def goofspiel_env(**kwargs: Any) -> Any:
    """Goofspiel with 13 cards as a PettingZoo AEC env (the arena's (43,) observation)."""
    return env("goofspiel", **kwargs)
