"""Uploads in the original rl-arena's format: detected, overridable, smoke-tested and dueling with it,
through the real pipeline (builder, smoke test, duel runner) in the configured sandbox."""

from __future__ import annotations

import pytest
from core_testlib import EXAMPLES, run_pipeline_inline

from core.actions import schedule_duel, submit_revision
from core.actions.errors import SubmissionError
from core.management.commands.load_example_players import zip_folder
from core.models import SmokeTest
from duel_runner.tasks import run_duel

pytestmark = pytest.mark.django_db(transaction=True)

RL_ARENA = EXAMPLES / "rl_arena"


def test_their_minimax_zip_is_detected_passes_its_smoke_test_and_beats_our_random(make_user, environments):
    user = make_user()
    minimax = submit_revision(user, "connect-four", "their-minimax", zip_folder(RL_ARENA / "minimax"))
    assert (minimax.agent_format, minimax.agent_format_detected) == ("rl-arena", True)
    minimax = run_pipeline_inline(minimax)
    assert minimax.state == "ELIGIBLE", minimax.error_message
    smoke = SmokeTest.objects.get(revision=minimax)
    assert smoke.passed and not [m for m in smoke.duel_json["matches"] if m["error_kind"]]

    ours = run_pipeline_inline(
        submit_revision(user, "connect-four", "our-random", zip_folder(EXAMPLES / "random"))
    )
    assert (ours.agent_format, ours.state) == ("native", "ELIGIBLE"), ours.error_message
    duel = schedule_duel(minimax, ours)
    assert run_duel(duel.pk) == "recorded"
    duel.refresh_from_db()
    assert duel.player_1_errors == duel.player_2_errors == duel.other_errors == 0, duel.error_msg
    assert duel.player_1_wins > duel.player_2_wins


def test_their_own_random_zip_plays_quarto_unchanged(make_user, environments):
    zipped = (RL_ARENA / "zips" / "random.zip").read_bytes()
    revision = run_pipeline_inline(submit_revision(make_user(), "quarto", "their-random", zipped))
    assert revision.agent_format == "rl-arena"
    assert revision.state == "ELIGIBLE", revision.error_message


def test_the_detected_format_can_be_overridden(make_user, environments):
    revision = submit_revision(
        make_user(), "connect-four", "as-native", zip_folder(RL_ARENA / "minimax"), agent_format="native"
    )
    assert (revision.agent_format, revision.agent_format_detected) == ("native", False)
    revision = run_pipeline_inline(revision)
    assert revision.state == "TEST_FAILED"
    assert "CRASH" in revision.error_message


def test_the_rl_arena_format_is_refused_for_a_game_rl_arena_did_not_have(make_user, environments):
    with pytest.raises(SubmissionError, match="rl-arena format exists for tic-tac-toe, connect-four, quarto"):
        submit_revision(
            make_user(), "leduc-holdem", "nope", zip_folder(RL_ARENA / "random"), agent_format="rl-arena"
        )
    revision = submit_revision(make_user(), "leduc-holdem", "detected", zip_folder(RL_ARENA / "random"))
    assert revision.agent_format == "native"  # environment.yml alone does not make it rl-arena there


def test_a_format_that_cannot_run_the_upload_is_refused(make_user, environments):
    kaggle = EXAMPLES / "kaggle_connectx"  # main.py only
    with pytest.raises(SubmissionError, match=r"no player\.py"):
        submit_revision(make_user(), "connect-four", "rl", zip_folder(kaggle), agent_format="rl-arena")
