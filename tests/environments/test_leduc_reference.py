"""Our Leduc Hold'em agrees with a reference implementation, OpenSpiel's ``leduc_poker``.

Hands OpenSpiel played (``data/leduc_openspiel_hands.json``, written by ``record_leduc_reference.py``) are
replayed on our rules: the same legal actions before every action and the same chips won. Where
OpenSpiel is installed (the ``dev`` extra), random hands of our rules are also mirrored in it live.
"""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path

import pytest

from environments import get_game
from environments.leduc_holdem.rules import FOLD, RAISE, deal

GAME = get_game("leduc-holdem")
RECORDED = json.loads((Path(__file__).parent / "data" / "leduc_openspiel_hands.json").read_text())


@functools.cache
def seed_dealing(hand: int, seat_0: int, seat_1: int, public: int | None) -> int:
    """A match seed whose hand ``hand`` deals these cards (any public card when ``public`` is None)."""
    for seed in range(100_000):
        c0, c1, p = deal(seed, hand)
        if (c0, c1) == (seat_0, seat_1) and public in (None, p):
            return seed
    raise AssertionError("no seed deals these cards")


def at_hand(seed: int, hand: int) -> dict:
    """The state of the match seeded ``seed`` at the start of ``hand`` (earlier hands: a bet and a fold)."""
    state = GAME.initial_state(seed)
    while state["hand"] < hand:
        state = GAME.apply(GAME.apply(state, RAISE), FOLD)
    return state


@pytest.mark.parametrize("first", [0, 1], ids=["seat 0 acts first", "seat 1 acts first"])
def test_recorded_openspiel_hands_play_alike_on_our_rules(first):
    """OpenSpiel's player 0 (who acts first) is our seat ``first``: hand 0 or hand 1 of a match."""
    for record in RECORDED:
        p0, p1 = record["cards"]
        cards = (p0, p1) if first == 0 else (p1, p0)
        state = at_hand(seed_dealing(first, *cards, record["public"]), first)
        chips_before = list(state["chips"])
        for legal, action in zip(record["legal"], record["actions"], strict=True):
            assert state["hand"] == first, f"our hand ended early: {record}"
            assert GAME.legal_actions(state) == legal, record
            state = GAME.apply(state, action)
        assert len(state["history"]) == first + 1, f"our hand did not end: {record}"
        played = state["history"][first]
        assert played["public"] == record["public"], record
        net = [played["net"][first], played["net"][1 - first]]  # in OpenSpiel's numbering
        assert net == record["returns"], record
        assert state["chips"][first] - chips_before[first] == record["returns"][0]


def test_every_kind_of_hand_is_in_the_recording():
    """Folds in both rounds, showdowns won, lost and split, and the two-raise cap in both rounds."""
    folds = {
        (rnd, record["actions"][-1] == FOLD)
        for record in RECORDED
        for rnd in (0 if record["public"] is None else 1,)
    }
    assert {(0, True), (1, True), (1, False)} <= folds
    assert {record["returns"][0] > 0 for record in RECORDED if record["public"] is not None} == {True, False}
    assert any(r["returns"] == [0.0, 0.0] for r in RECORDED)
    assert any(legal == [FOLD, 1] for r in RECORDED for legal in r["legal"])  # raise capped


def test_random_hands_of_our_rules_play_alike_in_openspiel():
    pyspiel = pytest.importorskip("pyspiel")
    reference = pyspiel.load_game("leduc_poker")
    rng = random.Random(7)
    for _ in range(300):
        seed = rng.randrange(2**31)
        ours = GAME.initial_state(seed)
        theirs = reference.new_initial_state()
        c0, c1, public = deal(seed, 0)
        theirs.apply_action(c0)
        theirs.apply_action(c1)
        while not ours["history"]:
            if theirs.is_chance_node():
                assert public in [a for a, _ in theirs.chance_outcomes()]
                theirs.apply_action(public)
            assert sorted(theirs.legal_actions()) == GAME.legal_actions(ours)
            assert theirs.current_player() == ours["to_move"]
            action = rng.choice(GAME.legal_actions(ours))
            ours = GAME.apply(ours, action)
            theirs.apply_action(action)
        assert theirs.is_terminal()
        assert ours["history"][0]["net"] == theirs.returns()
