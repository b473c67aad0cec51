"""The board games fail on corrupted states with the games' own errors, never a raw Python exception.

(``validate_state`` is the gatekeeper for untrusted states and is checked for every game by the
conformance test; here the board games also promise that ``apply``/``legal_actions`` never crash with
``TypeError``/``IndexError``/``KeyError`` on garbage.)
"""

from __future__ import annotations

import contextlib
import copy
import random

import pytest

from environments import IllegalActionError, InvalidStateError, get_game

JUNK = [None, True, -5, 10**6, 2.5, "x", [], {}, [None], [[1, 2]]]


def states_of_a_playout(slug: str, seed: int = 3) -> list[dict]:
    game = get_game(slug)
    rng = random.Random(seed)
    state = game.initial_state()
    states = [state]
    while not game.is_over(state):
        state = game.apply(state, rng.choice(game.legal_actions(state)))
        states.append(state)
    return states


def corrupted_variants(state: dict):
    """Copies of ``state`` with one field, or one (nested) element of a list field, replaced by junk."""
    for key, value in state.items():
        for junk in JUNK:
            yield {**copy.deepcopy(state), key: junk}
        if isinstance(value, list) and value:
            for junk in JUNK:
                changed = copy.deepcopy(state)
                changed[key][len(value) // 2] = junk
                yield changed
                if isinstance(value[0], list):
                    changed = copy.deepcopy(state)
                    changed[key][-1][0] = junk
                    yield changed
                    changed = copy.deepcopy(state)
                    del changed[key][-1][-1]
                    yield changed
            shorter = copy.deepcopy(state)
            del shorter[key][-1]
            yield shorter
        smaller = copy.deepcopy(state)
        del smaller[key]
        yield smaller


@pytest.mark.parametrize("slug", ["tic-tac-toe", "connect-four", "quarto"])
def test_apply_and_legal_actions_on_corrupted_states_raise_only_the_games_errors(slug):
    game = get_game(slug)
    states = states_of_a_playout(slug)
    for state in states[:: max(1, len(states) // 5)]:
        actions = game.legal_actions(state)[:4] or [0]
        for bad in corrupted_variants(state):
            for action in actions:
                try:
                    game.apply(bad, action)
                except (IllegalActionError, InvalidStateError) as exc:
                    assert str(exc)
            with contextlib.suppress(InvalidStateError):
                game.legal_actions(bad)
