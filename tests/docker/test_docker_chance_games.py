"""Leduc Hold'em and Goofspiel in the Docker sandbox: each game's strong example player, built as an upload
is built, plays one duplicate pair of matches against the random player."""

from __future__ import annotations

import uuid

import pytest
from dockertest_support import REPO, containers_with_label

from environments import get_game
from run_duel.api import LaunchSpec, play_duel, validate_duel_json

pytestmark = pytest.mark.docker

STRONG = {
    "leduc-holdem": REPO / "example_players" / "leduc_cfr",
    "goofspiel": REPO / "example_players" / "goofspiel_matcher",
}


@pytest.mark.parametrize("slug", sorted(STRONG))
def test_the_example_players_play_a_duplicate_pair_in_docker(slug, build_dir, random_image, docker_sandbox):
    label = f"chance-{uuid.uuid4().hex[:8]}"
    duel = play_duel(
        slug,
        docker_sandbox,
        LaunchSpec(agent=build_dir(STRONG[slug]), labels={"duel": label}),
        LaunchSpec(agent=random_image, labels={"duel": label}),
        matches=2,
        seed=99,
    )
    validate_duel_json(duel)
    assert duel["player_1_errors"] == duel["player_2_errors"] == duel["other_errors"] == 0, duel["error_msg"]
    first, second = duel["matches"]
    assert first["seed"] == second["seed"] and first["states"][0] == second["states"][0]
    assert (first["first_player"], second["first_player"]) == ("PLAYER_1", "PLAYER_2")
    game = get_game(slug)
    for match in duel["matches"]:
        state = game.initial_state(match["seed"])
        for action in match["actions"]:
            state = game.apply(state, action)
        assert state == match["states"][-1] and game.is_over(state)
    assert containers_with_label("duel", label) == []
