"""A duel JSON played by the real referee (random players, in-process harness), as it crosses the wire
(plain JSON): shared by the tests of how results are stored and read back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from run_duel.referee import play_duel
from run_duel.sandbox.base import LaunchSpec, Limits
from run_duel.sandbox.inprocess import InProcessSandbox

RANDOM_PLAYER = Path(__file__).resolve().parents[1] / "example_players" / "random"


def random_duel_json(slug: str, matches: int) -> dict[str, Any]:
    """``matches`` matches of ``slug`` between two random players, as plain JSON."""
    spec = LaunchSpec(str(RANDOM_PLAYER))
    duel = play_duel(
        slug,
        InProcessSandbox(),
        spec,
        spec,
        matches=matches,
        limits=Limits(move_timeout=5.0, init_timeout=30.0),
        pin_cpus=False,
    )
    return json.loads(json.dumps(duel))
