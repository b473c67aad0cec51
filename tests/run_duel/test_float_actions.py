"""Agents written to the rl-arena document return floats: a whole-number float (or numpy float) is the
int it equals; a fractional one is refused with a message that says so."""

from __future__ import annotations

import textwrap

import pytest

from run_duel.api import LaunchSpec, get_sandbox, play_duel
from run_duel.harness.arena_harness import encode_action
from run_duel.referee import as_action


def _agent(tmp_path, name: str, body: str):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "player.py").write_text(textwrap.dedent(body))
    return folder


FLOAT_PLAYER = """
import numpy as np

class Player:
    def __init__(self, train_mode):
        self.kind = {kind!r}

    def start(self, state, valid_actions):
        return self.step(state, valid_actions, 0.0)

    def step(self, state, valid_actions, prev_reward):
        a = int(valid_actions[0])
        return {{"float": float(a), "np": np.float64(a), "array": np.array([a], dtype=np.float32),
                 "half": a + 0.5}}[self.kind]

    def end(self, state, prev_reward):
        pass
"""


@pytest.mark.parametrize("kind", ["float", "np", "array"])
def test_whole_number_floats_are_played_as_ints(tmp_path, kind):
    agent = _agent(tmp_path, kind, FLOAT_PLAYER.format(kind=kind))
    sandbox = get_sandbox("local")
    try:
        duel = play_duel("connect-four", sandbox, LaunchSpec(str(agent)), LaunchSpec(str(agent)), matches=2)
    finally:
        sandbox.close()
    assert duel["player_1_errors"] == duel["player_2_errors"] == 0, duel["matches"][0]["error_msg"]


def test_a_fractional_float_is_refused_and_the_message_says_why(tmp_path):
    agent = _agent(tmp_path, "half", FLOAT_PLAYER.format(kind="half"))
    sandbox = get_sandbox("local")
    try:
        duel = play_duel("connect-four", sandbox, LaunchSpec(str(agent)), LaunchSpec(str(agent)), matches=1)
    finally:
        sandbox.close()
    match = duel["matches"][0]
    assert match["error_kind"] == "INVALID_ACTION"
    assert "a float that is not a whole number" in match["error_msg"]
    assert "its move 1 (move 1 of the match)" in match["error_msg"]


def test_conversion_rules():
    assert as_action(3.0) == 3 and type(as_action(3.0)) is int
    assert as_action(3.5) == 3.5 and as_action(True) is True and as_action("3") == "3"
    assert encode_action(__import__("numpy").float32(2.0)) == b'{"type":"action","action":2.0}\n'
