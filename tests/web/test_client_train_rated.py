"""From a training loop to a rating earned in a real duel: the SB3 example in quick mode trains against a
live arena's public agent, its callback submits numpy-only checkpoints (the arena runs the local sandbox,
which installs no packages), a real worker builds and smoke-tests them, the ladder pairs the competitor
with the public agent, the worker plays the duel, the rating task rates it, and the training run reports
the rating it read back through the client."""

from __future__ import annotations

import pytest
from django.db.models import Q

from core.actions import submit_revision
from core.management.commands.load_example_players import EXAMPLES_DIR, zip_folder
from core.models import Duel, Revision
from tests.web.training_lib import (
    arena_worker,  # noqa: F401 - the fixture
    checkpoint_revisions,
    league_played,
    login,
    quick_args,
    train_module,
    wait_for,
    zip_names,
)

pytest.importorskip("sb3_contrib")
pytest.importorskip("torch")


@pytest.mark.django_db(transaction=True)
def test_a_checkpoint_submitted_while_training_is_rated_after_a_real_duel(
    live_server,
    data_dir,
    env,
    alice,
    bob,
    arena_worker,  # noqa: F811 - the fixture imported above
    monkeypatch,
    tmp_path,
    settings,
):
    settings.SANDBOX = "local"
    rand = submit_revision(bob, "connect-four", "rand", zip_folder(EXAMPLES_DIR / "random"), is_public=True)
    wait_for(lambda: Revision.objects.get(pk=rand.pk).state == "ELIGIBLE", 180, "the public agent's build")
    login(live_server.url, monkeypatch, tmp_path)

    train = train_module("train_sb3_connect_four")
    args = quick_args(
        train,
        live_server.url,
        tmp_path,
        *("--submit-every", "256", "--name", "sb3-rated", "--numpy-checkpoints", "--wait-rating", "600"),
    )
    report = train.train(args)

    assert league_played(report, {"rand"})  # the public agent, fetched and run in the local sandbox
    (revision,) = checkpoint_revisions(report, alice, "sb3-rated")
    assert {"player.py", "model.npz"} <= zip_names(data_dir, revision)
    assert not {"model.onnx", "requirements.txt"} & zip_names(data_dir, revision)
    assert report["checkpoints"][0]["state"] == "ELIGIBLE"
    # a duel the worker played against the public agent, rated: the rating the run read back
    played = Q(revision_1=revision, revision_2=rand) | Q(revision_1=rand, revision_2=revision)
    duels = Duel.objects.filter(played, state="FINISHED", rated=True)
    assert duels.exists()
    rating = report["rating"]
    assert rating is not None and rating["matches"] > 0 and rating["sigma"] < 25 / 3  # moved by the duel
    assert any(line.startswith("sb3-rated: rated ") for line in report["log"])
    assert "Traceback" not in arena_worker.log()
