"""Record Leduc Hold'em hands played by OpenSpiel's ``leduc_poker`` (the reference rules) as JSON.

    cd tests/environments
    ../../.venv/bin/python record_leduc_reference.py > data/leduc_openspiel_hands.json

Each hand is in OpenSpiel's numbering (player 0 acts first in both rounds): the private cards, the public
card (null when the hand ended before it), the betting actions (0 fold, 1 call/check, 2 raise), the legal
actions before each of them, and the returns in chips. ``test_leduc_reference.py`` replays them on our
rules, so the comparison runs even where OpenSpiel is not installed.
"""

from __future__ import annotations

import json
import random
import sys

import pyspiel


def record(count: int, seed: int) -> list[dict]:
    """``count`` hands with uniformly random chance outcomes and legal actions."""
    game = pyspiel.load_game("leduc_poker")
    rng = random.Random(seed)
    hands = []
    for _ in range(count):
        state = game.new_initial_state()
        cards, public, actions, legal = [], None, [], []
        while not state.is_terminal():
            if state.is_chance_node():
                outcome = rng.choice([a for a, _ in state.chance_outcomes()])
                if len(cards) < 2:
                    cards.append(outcome)
                else:
                    public = outcome
                state.apply_action(outcome)
                continue
            options = sorted(state.legal_actions())
            action = rng.choice(options)
            legal.append(options)
            actions.append(action)
            state.apply_action(action)
        hands.append(
            {"cards": cards, "public": public, "actions": actions, "legal": legal, "returns": state.returns()}
        )
    return hands


if __name__ == "__main__":
    hands = record(int(sys.argv[1]) if len(sys.argv) > 1 else 300, seed=2026)
    sys.stdout.write("[\n" + ",\n".join(json.dumps(h) for h in hands) + "\n]\n")
