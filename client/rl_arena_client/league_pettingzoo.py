"""The arena's league as a PettingZoo AEC environment: each agent is a learner seat playing its own match
against an opponent drawn by PFSP from the same ``OpponentPool`` as ``LeagueEnv`` (the arena's public
agents run in the local sandbox with the arena's harness, local folders, in-process policies, self-play
snapshots).

    from rl_arena_client.league import OpponentPool, fetch_league
    from rl_arena_client.league_pettingzoo import LeagueAECEnv

    pool = OpponentPool(fetch_league(Client("https://arena.example"), "connect-four", cache_dir))
    env = LeagueAECEnv("connect-four", pool, learners=2)   # a pettingzoo.AECEnv: learner_0, learner_1
    env.reset(seed=0)
    for agent in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        action = None if termination or truncation else policy(obs["observation"], obs["action_mask"])
        env.step(action)

- **Agents** ``learner_0`` … ``learner_{n-1}`` (``learners``, default 1): n matches played side by side,
  each against its own opponent (``infos[agent]["opponent"]``) and in its own seat
  (``infos[agent]["seat"]``, alternating from one reset to the next unless ``learner_seat``). They move in
  turn; an agent whose match ended is terminated, takes its dead step (``None``) and leaves ``agents``;
  the episode ends with the last match. The opponents' moves are played inside ``reset`` and ``step``.
- **Observations** ``{"observation": float32, "action_mask": int8}``: what a submitted agent receives in
  that seat, and the legal moves. **Rewards**: +1 / -1 / 0 at the end of the agent's match; an illegal
  action loses it (``infos[agent]["illegal_action"]``), an opponent's crash, timeout or illegal move wins
  it (``infos[agent]["opponent_fault"]``).
- **PFSP** and the results kept per opponent are the pool's (``OpponentPool``): every finished match is
  recorded, whatever agent played it. ``pool.add_snapshot(name, policy)`` adds a frozen learner.

It passes ``pettingzoo.test.api_test``. ``pettingzoo`` is imported only when an environment is built.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from rl_arena_client.league import LeagueEnv, OpponentPool


class LeagueAECEnv:
    """A ``pettingzoo.AECEnv`` of ``learners`` matches against the league (the class is built on first use
    so that ``pettingzoo`` stays optional; see the module docstring)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return _aec_class()(*args, **kwargs)


@functools.cache
def _aec_class() -> type:
    from pettingzoo import AECEnv

    class _LeagueAECEnv(AECEnv):
        def __init__(
            self,
            slug: str,
            pool: OpponentPool,
            *,
            learners: int = 1,
            learner_seat: int | None = None,
            no_bwrap: bool = False,
        ) -> None:
            super().__init__()
            if learners < 1:
                raise ValueError("learners must be at least 1")
            self.slug = slug
            self.pool = pool
            self.possible_agents = [f"learner_{i}" for i in range(learners)]
            # one single-seat league per agent: its own match, its opponent's sandboxed process
            self._matches: dict[str, Any] = {
                agent: LeagueEnv(slug, pool, learner_seat=learner_seat, no_bwrap=no_bwrap)
                for agent in self.possible_agents
            }
            first = self._matches[self.possible_agents[0]]
            self.observation_spaces = {a: first.observation_space for a in self.possible_agents}
            self.action_spaces = {a: first.action_space for a in self.possible_agents}
            self.metadata = {
                "name": f"rl_arena_league_{slug.replace('-', '_')}_v0",
                "render_modes": [],
                "is_parallelizable": False,
            }
            self.render_mode = None
            self._observations: dict[str, dict[str, np.ndarray]] = {}
            self.agents: list[str] = []
            self.rewards: dict[str, float] = {}
            self._cumulative_rewards: dict[str, float] = {}
            self.terminations: dict[str, bool] = {}
            self.truncations: dict[str, bool] = {}
            self.infos: dict[str, dict[str, Any]] = {}
            self.agent_selection = self.possible_agents[0]
            self._skip_agent_selection: str | None = None

        def observation_space(self, agent: str) -> Any:
            return self.observation_spaces[agent]

        def action_space(self, agent: str) -> Any:
            return self.action_spaces[agent]

        def reset(self, seed: int | None = None, options: dict | None = None) -> None:
            """A new match for every agent, each with an opponent drawn by PFSP (``seed`` seeds the draws
            and the games' chance, one stream per agent)."""
            self.agents = list(self.possible_agents)
            self.rewards = dict.fromkeys(self.agents, 0.0)
            self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
            self.terminations = dict.fromkeys(self.agents, False)
            self.truncations = dict.fromkeys(self.agents, False)
            self.infos = {}
            for i, agent in enumerate(self.agents):
                obs, info = self._matches[agent].reset(seed=None if seed is None else seed * 1009 + i)
                self._observations[agent], self.infos[agent] = obs, info
            self.agent_selection = self.agents[0]
            self._skip_agent_selection = None

        def observe(self, agent: str) -> dict[str, np.ndarray]:
            return self._observations[agent]

        def _next_live(self, after: str) -> str | None:
            """The next agent in turn after ``after`` whose match goes on."""
            order = self.agents[self.agents.index(after) + 1 :] + self.agents[: self.agents.index(after)]
            return next((a for a in order if not self.terminations[a]), None)

        def step(self, action: Any) -> None:
            agent = self.agent_selection
            if self.terminations[agent] or self.truncations[agent]:
                self._was_dead_step(action)
                return
            self._cumulative_rewards[agent] = 0.0
            self.rewards = dict.fromkeys(self.agents, 0.0)
            obs, reward, terminated, truncated, info = self._matches[agent].step(int(action))
            self._observations[agent], self.infos[agent] = obs, info
            self.rewards[agent] = float(reward)
            self.terminations[agent], self.truncations[agent] = bool(terminated), bool(truncated)
            following = self._next_live(agent)
            if terminated or truncated:
                # the ended match's agent takes its dead step next, then play goes on with the others
                self._skip_agent_selection = following
            elif following is not None:
                self.agent_selection = following
            self._accumulate_rewards()

        def close(self) -> None:
            """Stop the opponents' processes and their sandboxes."""
            for match in self._matches.values():
                match.close()

    return _LeagueAECEnv
