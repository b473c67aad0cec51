"""Fixtures for the example-player tests: the player modules, loaded from their folders."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _play import EXAMPLES, load_player_module


@pytest.fixture(scope="session")
def minimax_module() -> ModuleType:
    """``example_players/minimax/player.py``."""
    return load_player_module(EXAMPLES / "minimax")


@pytest.fixture(scope="session")
def random_module() -> ModuleType:
    """``example_players/random/player.py``."""
    return load_player_module(EXAMPLES / "random")


@pytest.fixture(scope="session")
def engine_module(minimax_module):
    """Load one of the minimax folder's per-game modules the way ``player.py`` does."""
    return minimax_module._load
