"""The random example player: legal, uniform-ish, independent between instances."""

import numpy as np
import pytest
from _play import play_match

from environments import all_slugs


@pytest.mark.parametrize("slug", all_slugs())
def test_random_player_only_plays_valid_actions_in_every_game(random_module, slug):
    players = [random_module.Player(train_mode=False) for _ in range(2)]
    for i in range(10):
        play_match(slug, players[i % 2], players[1 - i % 2])  # raises on any illegal action


def test_random_player_returns_a_python_int(random_module):
    action = random_module.Player(False).start(np.zeros((3, 3), np.int8), np.arange(9, dtype=np.int64))
    assert type(action) is int


def test_random_player_covers_all_valid_actions(random_module):
    player = random_module.Player(False)
    valid = np.array([1, 4, 7], dtype=np.int64)
    seen = {player.step(np.zeros((3, 3), np.int8), valid, 0.0) for _ in range(200)}
    assert seen == {1, 4, 7}


def test_two_random_players_are_seeded_differently(random_module):
    valid = np.arange(289, dtype=np.int64)
    obs = np.full(17, -1)
    a, b = random_module.Player(False), random_module.Player(False)
    assert [a.step(obs, valid, 0.0) for _ in range(30)] != [b.step(obs, valid, 0.0) for _ in range(30)]
