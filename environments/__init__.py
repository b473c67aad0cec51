"""The games: pure rules over JSON-able states, their ``info.yml`` and their browser renderers.

Use the registry, never a game module directly::

    from environments import get_game, get_info
    game = get_game("connect-four")
"""

from environments.base import Game, GameInfo, IllegalActionError, InvalidStateError, State
from environments.registry import (
    GameRegistryError,
    InvalidGameInfoError,
    UnknownGameError,
    all_slugs,
    get_game,
    get_info,
    load_info,
    parse_info,
    static_dir,
)

__all__ = [
    "Game",
    "GameInfo",
    "GameRegistryError",
    "IllegalActionError",
    "InvalidGameInfoError",
    "InvalidStateError",
    "State",
    "UnknownGameError",
    "all_slugs",
    "get_game",
    "get_info",
    "load_info",
    "parse_info",
    "static_dir",
]
