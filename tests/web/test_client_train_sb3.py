"""The Stable-Baselines3 example (example_players/train_sb3_connect_four) in quick mode against a live
arena: its public agents fetched as the league, checkpoints submitted from the training callback through
the client, their build and the competitor's rating reported back; the exported folder passes the arena's
smoke test and plays its ONNX model. (The rating earned by a real duel: test_client_train_rated.)"""

from __future__ import annotations

import pytest
from rl_arena_client.api import Client
from rl_arena_client.submission import CheckpointSubmitter

from core.management.commands.load_example_players import EXAMPLES_DIR
from core.models import Revision
from tests.web import factories
from tests.web.test_client_league import _publish
from tests.web.training_lib import (
    check_exported_agent,
    checkpoint_revisions,
    league_played,
    login,
    quick_args,
    train_module,
    zip_names,
)

pytest.importorskip("sb3_contrib")
pytest.importorskip("torch")


@pytest.fixture
def token(monkeypatch, tmp_path, live_server, alice, settings):
    """Alice logged in with the client. The arena runs the Docker sandbox, whose builder installs the
    checkpoints' onnxruntime (a local-sandbox arena refuses them)."""
    settings.SANDBOX = "docker"
    return login(live_server.url, monkeypatch, tmp_path)


@pytest.mark.django_db(transaction=True)
def test_quick_training_against_the_league_submits_checkpoints(
    live_server, data_dir, env, alice, bob, token, tmp_path
):
    _publish(bob, env, "mini", "minimax", data_dir)
    _publish(bob, env, "rand", "random", data_dir)
    train = train_module("train_sb3_connect_four")
    args = quick_args(train, live_server.url, tmp_path, "--submit-every", "128", "--name", "sb3-bot")
    report = train.train(args)

    assert league_played(report, {"mini", "rand"})  # fetched, run in the local sandbox
    assert report["steps"] >= 256
    # the callback submitted a checkpoint every 128 steps, each a complete agent folder with its model
    assert [cp["step"] for cp in report["checkpoints"]] == [128, 256]
    revisions = checkpoint_revisions(report, alice, "sb3-bot")
    assert {"player.py", "requirements.txt", "model.onnx", "model.npz"} <= zip_names(data_dir, revisions[-1])
    check_exported_agent(tmp_path / "out", report)


@pytest.mark.django_db(transaction=True)
def test_the_submitter_reports_the_build_and_the_rating(live_server, data_dir, env, alice, token):
    said: list[str] = []
    submitter = CheckpointSubmitter(
        Client(live_server.url, token), "connect-four", "rated-bot", poll_every=0, log=said.append
    )
    checkpoint = submitter.submit(EXAMPLES_DIR / "random", step=500)
    assert submitter.poll() is None  # uploaded, not built, not rated
    assert said == [f"rated-bot v1 (step 500): uploaded, revision {checkpoint.revision_id}"]

    # the arena builds it, tests it and rates it (written here; a worker does it in test_client_train_rated)
    rev = Revision.objects.get(pk=checkpoint.revision_id)
    Revision.objects.filter(pk=rev.pk).update(state=Revision.State.ELIGIBLE)
    rev.competitor.current_revision = rev
    rev.competitor.save(update_fields=["current_revision"])
    factories.rate(rev.competitor, mu=30.0, sigma=2.0)

    rating = submitter.wait(timeout=30, poll=0.1)
    assert rating is not None and rating["matches"] == 20 and rating["conservative"] == pytest.approx(24.0)
    assert said[1] == "rated-bot v1 (step 500): ELIGIBLE"
    assert said[2].startswith("rated-bot: rated 24.00 (mu 30.00, sigma 2.00) after 20 matches, playing v1")


@pytest.mark.django_db(transaction=True)
def test_a_failed_checkpoint_says_why_and_waits_for_no_rating(live_server, data_dir, env, alice, token):
    said: list[str] = []
    submitter = CheckpointSubmitter(
        Client(live_server.url, token), "connect-four", "bad-bot", log=said.append
    )
    checkpoint = submitter.submit(EXAMPLES_DIR / "random", step=1)
    Revision.objects.filter(pk=checkpoint.revision_id).update(
        state=Revision.State.TEST_FAILED, error_message="smoke test: the agent crashed"
    )
    assert submitter.wait(timeout=30, poll=0.1) is None
    assert said[-1] == "bad-bot v1 (step 1): TEST_FAILED: smoke test: the agent crashed"
