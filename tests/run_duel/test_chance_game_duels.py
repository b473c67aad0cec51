"""Duels of the games with chance, private cards and simultaneous moves, through the real local sandbox.

One duel per game checks at once: the example players play it to the end; matches come in duplicate
pairs (same seed, seats swapped); the seed and the actions replay every recorded state; each agent was
sent exactly its own seat's observation (a spy agent prints what it gets), so Leduc's hidden card and
Goofspiel's first bid of a turn never reach the other seat.
"""

from __future__ import annotations

import json

import pytest
from run_duel_helpers import EXAMPLES, FAST_LIMITS, TrackingSandbox, assert_nothing_left

from environments import get_game
from run_duel.duel_result import validate_duel_json
from run_duel.referee import match_seed, play_duel
from run_duel.sandbox.base import LaunchSpec

#: Plays like random and prints every observation it is sent (to stderr: the duel's player log).
SPY = """
import json, random, sys

class Player:
    def __init__(self, train_mode=False):
        self.rng = random.Random(5)

    def start(self, state, valid_actions):
        return self.step(state, valid_actions, 0.0)

    def step(self, state, valid_actions, prev_reward):
        print("OBS " + json.dumps([int(v) for v in state]), file=sys.stderr, flush=True)
        return int(self.rng.choice(list(valid_actions)))

    def end(self, state, prev_reward):
        pass
"""

STRONG = {"leduc-holdem": EXAMPLES / "leduc_cfr", "goofspiel": EXAMPLES / "goofspiel_matcher"}


@pytest.fixture(scope="module", params=sorted(STRONG))
def spied_duel(request, tmp_path_factory):
    slug = request.param
    spy = tmp_path_factory.mktemp("spy")
    (spy / "player.py").write_text(SPY)
    sandbox = TrackingSandbox()
    duel = play_duel(
        slug,
        sandbox,
        LaunchSpec(str(STRONG[slug])),
        LaunchSpec(str(spy)),
        matches=4,
        limits=FAST_LIMITS,
        seed=1234,
    )
    sandbox.close()
    assert_nothing_left(sandbox)
    return slug, duel


def test_the_example_players_play_every_match_to_the_end(spied_duel):
    slug, duel = spied_duel
    validate_duel_json(duel)
    assert [m["result"] for m in duel["matches"] if m["error_kind"]] == []
    assert duel["player_1_errors"] == duel["player_2_errors"] == 0
    assert duel["environment"] == slug


def test_matches_come_in_duplicate_pairs_dealt_from_the_duels_seed(spied_duel):
    _, duel = spied_duel
    assert duel["seed"] == 1234 and duel["duplicate"] is True
    seeds = [m["seed"] for m in duel["matches"]]
    assert seeds == [match_seed(1234, i) for i in range(4)]
    assert seeds[0] == seeds[1] != seeds[2] == seeds[3]
    assert [m["first_player"] for m in duel["matches"]] == ["PLAYER_1", "PLAYER_2"] * 2


def test_the_seed_and_the_actions_replay_every_recorded_state(spied_duel):
    slug, duel = spied_duel
    game = get_game(slug)
    for match in duel["matches"]:
        states = match["states"]
        assert states[0] == game.initial_state(match["seed"])
        assert len(states) == len(match["actions"]) + 1
        state = states[0]
        for action, recorded in zip(match["actions"], states[1:], strict=True):
            state = game.apply(state, action)
            assert state == recorded
        assert game.is_over(state)


def test_each_agent_was_sent_only_its_own_seats_observation(spied_duel):
    """The spy (PLAYER_2) got, move after move, exactly ``observation(state, its seat)``."""
    slug, duel = spied_duel
    game = get_game(slug)
    sent = [json.loads(line[4:]) for line in duel["player_2_log"].splitlines() if line.startswith("OBS ")]
    expected = []
    for match in duel["matches"]:
        spy_seat = 1 if match["first_player"] == "PLAYER_1" else 0
        for state in match["states"][:-1]:
            if not game.is_over(state) and game.to_move(state) == spy_seat:
                expected.append(game.observation(state, spy_seat).tolist())
    assert sent == expected
