"""The league as a PettingZoo AEC environment (rl_arena_client.league_pettingzoo) against a live arena:
its public agents fetched and run in the local sandbox with the arena's harness, drawn by PFSP with a
self-play snapshot in the pool; PettingZoo's own API test; matches played side by side."""

from __future__ import annotations

import random

import numpy as np
import pytest
from rl_arena_client.api import Client
from rl_arena_client.league import OpponentPool, fetch_league

from tests.web.test_client_league import _publish_the_league

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test
from rl_arena_client.league_pettingzoo import LeagueAECEnv


@pytest.mark.django_db(transaction=True)
def test_the_pettingzoo_league_plays_the_arenas_public_agents(
    live_server, data_dir, env, alice, bob, tmp_path
):
    _publish_the_league(alice, bob, env, data_dir)

    opponents = fetch_league(Client(live_server.url), "connect-four", tmp_path / "cache", log=lambda _: None)
    assert sorted(o.name for o in opponents) == ["mini", "rand"]
    # uniform draws: every opponent comes up in the seeded episodes below (PFSP: test_client_league)
    pool = OpponentPool(opponents, weighting="uniform", results_path=tmp_path / "results.json")
    pool.add_snapshot("self-0", lambda obs, mask: int(np.flatnonzero(mask)[0]))  # a frozen learner

    aec = LeagueAECEnv("connect-four", pool, learners=2)
    try:
        api_test(aec, num_cycles=60)

        rng = random.Random(0)
        seen: set[str] = set()
        before = sum(games for _, games in pool.results.values())
        for episode in range(6):
            aec.reset(seed=episode)
            assert aec.agents == ["learner_0", "learner_1"]
            seen.update(aec.infos[a]["opponent"] for a in aec.agents)
            assert {aec.infos[a]["seat"] for a in aec.agents} <= {0, 1}
            finals: dict[str, float] = {}
            for agent in aec.agent_iter():
                obs, reward, termination, truncation, info = aec.last()
                assert obs["observation"].shape == (6, 7) and obs["action_mask"].dtype == np.int8
                if termination or truncation:
                    finals[agent] = reward
                    assert "opponent_fault" not in info, info
                    aec.step(None)
                else:
                    aec.step(rng.choice(list(np.flatnonzero(obs["action_mask"]))))
            assert set(finals) == {"learner_0", "learner_1"} and set(finals.values()) <= {-1.0, 0.0, 1.0}
            assert aec.agents == []
    finally:
        aec.close()
    assert seen == {"mini", "rand", "self-0"}
    # every match was recorded for PFSP (two per reset), and kept on disk
    assert sum(games for _, games in pool.results.values()) == before + 12
    assert OpponentPool(results_path=tmp_path / "results.json").results == pool.results
