"""A real failing duel for the privacy tests: the referee plays an agent that leaks secrets when it fails."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.conf import settings

from core.actions import claim_duel, record_duel_result, schedule_duel
from core.actions.jobs import Claim
from core.models import Duel, Revision
from tests.web import factories

#: Markers only Alice's agent produces: in its stderr, in a source line and in its exception.
SECRETS = ("SECRET-STDERR-LINE", "SECRET-SOURCE-LINE", "SECRET-EXCEPTION")
LEAKY_AGENT = """
import sys


class Player:
    def __init__(self, train_mode=False):
        self.n = 0

    def start(self, state, valid_actions):
        return self.step(state, valid_actions, 0.0)

    def step(self, state, valid_actions, prev_reward):
        self.n += 1
        print("SECRET-STDERR-LINE weights at /agent/model.bin", file=sys.stderr)
        if self.n >= 2:
            raise ValueError("SECRET-EXCEPTION " + str(self.n))  # SECRET-SOURCE-LINE
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
"""
SENTENCE = "leaky (player 2) crashed (its code raised an exception or its process ended)"


def play_referee_duel(tmp_path: Path) -> dict:
    """The duel JSON of a real 2-match duel (``python -m run_duel``, local sandbox): random (player 1)
    against the leaky agent (player 2)."""
    agent = tmp_path / "leaky"
    agent.mkdir()
    (agent / "player.py").write_text(LEAKY_AGENT)
    out = tmp_path / "duel.json"
    random_agent = Path(settings.BASE_DIR) / "example_players" / "random"
    options = ["--player-1", str(random_agent), "--player-2", str(agent), "--matches", "2", "--no-pin"]
    subprocess.run(
        [sys.executable, "-m", "run_duel", "--env", "connect-four", *options, "--output", str(out)],
        cwd=settings.BASE_DIR,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return json.loads(out.read_text())


def store_crashed_duel(env: Any, alice: Any, bob: Any, referee_json: dict) -> Duel:
    """Bob's public "steady" (player 1) against Alice's private "leaky" (player 2): ``referee_json``
    stored through the duel actions (schedule, claim, record)."""
    steady = factories.competitor(bob, env, "steady", is_public=True)
    leaky = factories.competitor(alice, env, "leaky")
    for comp in (steady, leaky):  # the referee plays the folders itself; the rows only need a reference
        Revision.objects.filter(pk=comp.current_revision_id).update(agent_ref="local-folder")
    duel = schedule_duel(steady.current_revision, leaky.current_revision, num_matches=2)
    claimed = claim_duel(duel.pk)
    duel_json = referee_json
    assert [m["result"] for m in duel_json["matches"]] == ["PLAYER_2_ERROR"] * 2
    assert all(s in duel_json["matches"][0]["error_msg"] for s in SECRETS)  # the referee quotes them
    assert record_duel_result(Claim.of(claimed), duel_json)
    return Duel.objects.get(pk=duel.pk)
