"""Write a game's ``static/sample_states.json``: the states of one seeded random playout.

Run ``python -m environments.sample_replay <slug> [--seed N]``. Web tests and renderer previews use the
file as a real replay.
"""

from __future__ import annotations

import argparse
import json
import random

from environments.base import Game, State
from environments.registry import get_game, static_dir


def random_playout(game: Game, seed: int, want_winner: bool = True, max_tries: int = 1000) -> list[State]:
    """States (initial to final) of a seeded random playout; by default the first one with a winner."""
    rng = random.Random(seed)
    states: list[State] = []
    for _ in range(max_tries):
        state = game.initial_state(rng.randrange(2**31)) if game.has_chance else game.initial_state()
        states = [state]
        while not game.is_over(state):
            state = game.apply(state, rng.choice(game.legal_actions(state)))
            states.append(state)
        if not want_winner or game.winner(state) is not None:
            break
    return states


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("slug")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    game = get_game(args.slug)
    states = random_playout(game, args.seed)
    path = static_dir(args.slug) / "sample_states.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[\n" + ",\n".join(json.dumps(s) for s in states) + "\n]\n", encoding="utf-8")
    print(f"wrote {len(states)} states to {path}")


if __name__ == "__main__":
    main()
