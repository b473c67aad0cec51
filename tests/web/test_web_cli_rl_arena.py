"""The light client and the original rl-arena's format: local duels and checks detect it or take
``--format``; ``submit --format`` sets it on the revision."""

from __future__ import annotations

import json

import pytest

from core.management.commands.load_example_players import EXAMPLES_DIR
from core.models import Revision
from tests.web.test_web_cli import _run, cli_env  # noqa: F401 - the live-server fixture

RL_ARENA = EXAMPLES_DIR / "rl_arena"


def test_a_local_duel_detects_their_minimax_which_beats_random(tmp_path):
    output = tmp_path / "duel.json"
    code, out = _run(
        "duel",
        "--env",
        "connect-four",
        str(RL_ARENA / "minimax"),
        "random",
        "--matches",
        "10",
        "--output",
        str(output),
    )
    assert code == 0, out
    duel = json.loads(output.read_text())
    assert duel["player_1_errors"] == duel["player_2_errors"] == 0, out
    assert duel["player_1_wins"] > duel["player_2_wins"], out


def test_check_runs_their_zip_unchanged_and_format_overrides_the_detection():
    code, out = _run("check", "--env", "quarto", str(RL_ARENA / "zips" / "random.zip"))
    assert code == 0 and out.startswith("passed: "), out
    code, out = _run("check", "--env", "connect-four", str(RL_ARENA / "minimax"), "--format", "native")
    assert code == 1 and out.startswith("FAILED: match 1 of 4: CRASH"), out


@pytest.mark.django_db(transaction=True)
def test_submit_sends_the_chosen_format(cli_env, alice, env):  # noqa: F811
    _run("login", "--email", "alice@example.com")
    code, out = _run("submit", "connect-four", "theirs", str(RL_ARENA / "minimax"), "--no-wait")
    assert code == 0, out
    code, out = _run(
        "submit", "connect-four", "theirs", str(RL_ARENA / "minimax"), "--format", "native", "--no-wait"
    )
    assert code == 0, out
    formats = Revision.objects.filter(competitor__name="theirs").order_by("version")
    assert [(r.agent_format, r.agent_format_detected) for r in formats] == [
        ("rl-arena", True),
        ("native", False),
    ]
