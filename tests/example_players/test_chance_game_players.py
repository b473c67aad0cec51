"""The example players of Leduc Hold'em (CFR+ table) and Goofspiel (rank matching), in process.

Matches are played in duplicate pairs as the referee plays them: the same seed twice, seats swapped.
Simultaneous Goofspiel turns ask both seats on the same state, as the referee does.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from environments import get_game
from tests.example_players._play import EXAMPLES, load_player_module

LEDUC = get_game("leduc-holdem")


def play_match(slug: str, seats: list, seed: int) -> dict:
    """One match from ``initial_state(seed)``; every acting seat chooses on the state the turn started in."""
    game = get_game(slug)
    state = game.initial_state(seed)
    started = [False, False]
    while not game.is_over(state):
        actions = {}
        for seat in game.acting_seats(state):
            obs = game.observation(state, seat)
            legal = game.legal_actions_for(state, seat)
            valid = np.asarray(legal, dtype=np.int64)
            player = seats[seat]
            action = player.step(obs, valid, 0.0) if started[seat] else player.start(obs, valid)
            started[seat] = True
            assert action in legal, f"{type(player).__module__} played {action!r}, legal: {legal}"
            actions[seat] = int(action)
        state = game.apply_joint(state, actions)
    rewards = game.rewards(state)
    for seat in (0, 1):
        seats[seat].end(game.observation(state, seat), rewards[seat])
    return state


def duplicate_series(slug: str, hero, villain, pairs: int) -> tuple[list[int], int]:
    """``pairs`` seeds played twice with the seats swapped: (hero's result per match, hero's total points)."""
    results, total = [], 0
    for seed in range(pairs):
        for hero_seat in (0, 1):
            seats = [hero, villain] if hero_seat == 0 else [villain, hero]
            final = play_match(slug, seats, seed)
            winner = get_game(slug).winner(final)
            results.append(0 if winner is None else (1 if winner == hero_seat else -1))
            key = "chips" if slug == "leduc-holdem" else "points"
            total += final[key][hero_seat] - (final[key][1 - hero_seat] if key == "points" else 0)
    return results, total


def reachable_leduc_information_sets() -> set[tuple[str, tuple[int, ...]]]:
    """Every (table key, legal actions) a seat can meet in one hand of our rules (all deals, all betting)."""
    player_module = load_player_module(EXAMPLES / "leduc_cfr")
    found = set()
    for seed in range(400):  # enough seeds to deal every (card, card, public) at hand 0
        stack = [LEDUC.initial_state(seed)]
        while stack:
            state = stack.pop()
            if state["hand"] != 0 or LEDUC.is_over(state):
                continue
            seat = LEDUC.to_move(state)
            legal = LEDUC.legal_actions(state)
            found.add((player_module.info_key(LEDUC.observation(state, seat)), tuple(legal)))
            stack.extend(LEDUC.apply(state, a) for a in legal)
    return found


def test_the_cfr_table_covers_every_information_set_of_our_rules_with_legal_actions_only():
    table = json.loads((EXAMPLES / "leduc_cfr" / "policy.json").read_text())
    reachable = reachable_leduc_information_sets()
    assert {key for key, _ in reachable} == set(table)
    for key, legal in reachable:
        probs = table[key]
        assert abs(sum(probs) - 1) < 1e-3
        assert all(p == 0 for a, p in enumerate(probs) if a not in legal), key


def test_the_cfr_player_beats_random_at_leduc_in_duplicate_matches():
    cfr = load_player_module(EXAMPLES / "leduc_cfr").Player()
    rnd = load_player_module(EXAMPLES / "random").Player()
    results, chips = duplicate_series("leduc-holdem", cfr, rnd, pairs=30)
    # Measured over 200 matches: 70 % won, 27 % lost, +0.78 chips a hand. Ten hands are a lot of luck,
    # so the checks are the chips (about 5 standard deviations above 0 here) and more wins than losses.
    assert chips > 0
    assert results.count(1) > results.count(-1), results


def test_the_matching_player_beats_random_at_goofspiel_in_duplicate_matches():
    matcher = load_player_module(EXAMPLES / "goofspiel_matcher").Player()
    rnd = load_player_module(EXAMPLES / "random").Player()
    results, margin = duplicate_series("goofspiel", matcher, rnd, pairs=20)
    assert margin > 0
    assert results.count(1) >= 3 * results.count(-1), results


@pytest.mark.parametrize("folder", ["leduc_cfr", "goofspiel_matcher"])
def test_the_players_still_play_another_game(folder):
    player = load_player_module(EXAMPLES / folder).Player()
    state = play_match("tic-tac-toe", [player, load_player_module(EXAMPLES / "random").Player()], 0)
    assert get_game("tic-tac-toe").is_over(state)
