"""Training against an arena's league with the light client: public agents fetched from a live arena, run
in the local sandbox with the arena's harness, drawn by PFSP; self-play snapshots; opponents that fail."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import numpy as np
import pytest
from rl_arena_client.api import Client
from rl_arena_client.league import LeagueEnv, Opponent, OpponentPool, fetch_league

from core.management.commands.load_example_players import EXAMPLES_DIR, zip_folder
from tests.web import factories

pytest.importorskip("gymnasium")


def _publish(owner, env, name: str, player: str, data_dir: Path, *, is_public: bool = True):
    comp = factories.competitor(owner, env, name, is_public=is_public)
    revision = comp.current_revision
    path = data_dir / revision.zip_path
    path.parent.mkdir(parents=True, exist_ok=True)
    data = zip_folder(EXAMPLES_DIR / player)
    path.write_bytes(data)
    # the web host's cached copy of the upload: served when it matches the revision's hash (core.blobs)
    type(revision).objects.filter(pk=revision.pk).update(content_hash=hashlib.sha256(data).hexdigest())
    return comp


def _publish_the_league(alice, bob, env, data_dir: Path) -> None:
    """Alice's minimax "mini" and Bob's random "rand", public; Bob's private "secret", never fetched."""
    _publish(alice, env, "mini", "minimax", data_dir)
    _publish(bob, env, "rand", "random", data_dir)
    _publish(bob, env, "secret", "random", data_dir, is_public=False)


def _random_learner(obs: dict, rng: random.Random) -> int:
    return rng.choice(list(np.flatnonzero(obs["action_mask"])))


@pytest.mark.django_db(transaction=True)
def test_the_learner_trains_against_the_arenas_public_agents(
    live_server, data_dir, env, alice, bob, tmp_path
):
    _publish_the_league(alice, bob, env, data_dir)

    pool = OpponentPool(
        fetch_league(Client(live_server.url), "connect-four", tmp_path / "cache", log=lambda _: None),
        results_path=tmp_path / "results.json",
    )
    assert sorted(o.name for o in pool.opponents) == ["mini", "rand"]
    assert all((o.folder / "player.py").is_file() for o in pool.opponents if isinstance(o, Opponent))

    env_ = LeagueEnv("connect-four", pool)
    rng = random.Random(1)
    seen, seats = set(), set()
    try:
        for episode in range(8):
            obs, info = env_.reset(seed=episode)
            assert obs["observation"].shape == (6, 7) and obs["action_mask"].shape == (7,)
            seen.add(info["opponent"])
            seats.add(info["seat"])
            done = False
            while not done:
                obs, reward, done, truncated, info = env_.step(_random_learner(obs, rng))
                assert not truncated
            assert reward in (-1.0, 0.0, 1.0)
            assert "opponent_fault" not in info, info
    finally:
        env_.close()
    assert seen == {"mini", "rand"} and seats == {0, 1}
    assert sum(games for _, games in pool.results.values()) == 8
    # minimax beats a random learner: PFSP then draws it more often than random
    assert pool.win_rate("mini") <= pool.win_rate("rand")
    assert pool.weight("mini") >= pool.weight("rand")
    assert OpponentPool(results_path=tmp_path / "results.json").results == pool.results  # kept on disk


def test_self_play_snapshots_and_failing_opponents(tmp_path):
    broken = Opponent("crashes", EXAMPLES_DIR / "broken" / "crash_mid_match")
    pool = OpponentPool([broken])
    pool.add_snapshot("me-0", lambda obs, mask: int(np.flatnonzero(mask)[-1]))
    env_ = LeagueEnv("tic-tac-toe", pool, learner_seat=0)
    rng = random.Random(3)
    faults = 0
    try:
        for episode in range(6):
            obs, info = env_.reset(seed=episode)
            done = False
            while not done:
                obs, reward, done, _, info = env_.step(_random_learner(obs, rng))
            if info["opponent"] == "crashes" and "opponent_fault" in info:
                faults += 1
                assert reward == 1.0 and info["opponent_fault"].startswith("CRASH")
        obs, info = env_.reset(seed=99)
        illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0]) if (obs["action_mask"] == 0).any() else 99
        obs, reward, done, _, info = env_.step(illegal)
        assert done and reward == -1.0 and "illegal_action" in info
    finally:
        env_.close()
    assert faults >= 1
    assert "crashes" in pool.results and set(pool.results) <= {"crashes", "me-0"}
