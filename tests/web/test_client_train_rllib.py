"""The Ray RLlib example (example_players/train_rllib_connect_four) in quick mode against a live
arena: its public agents fetched as the league, checkpoints submitted from the training callback through
the client, their build and the competitor's rating reported back; the exported folder passes the arena's
smoke test and plays its ONNX model."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
import zipfile

import numpy as np
import pytest
from rl_arena_client import cli
from rl_arena_client.api import load_config

from core.management.commands.load_example_players import EXAMPLES_DIR
from core.models import Revision
from tests.web.factories import PASSWORD
from tests.web.test_client_league import _publish

pytest.importorskip("ray.rllib")
pytest.importorskip("torch")

EXAMPLE = EXAMPLES_DIR / "train_rllib_connect_four"


def _train_module():
    spec = importlib.util.spec_from_file_location("_test_rllib_train", EXAMPLE / "train.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def token(monkeypatch, tmp_path, live_server, alice, settings):
    """Alice logged in with the client (its config in a temp folder); the token. The arena runs the Docker
    sandbox, whose builder installs the checkpoints' onnxruntime (a local-sandbox arena refuses them)."""
    settings.SANDBOX = "docker"
    monkeypatch.setenv("RL_ARENA_CONFIG", str(tmp_path / "config.json"))
    monkeypatch.setenv("RL_ARENA_PASSWORD", PASSWORD)
    code = cli.main(["--server", live_server.url, "login", "--email", "alice@example.com"], out=io.StringIO())
    assert code == 0
    return load_config()["token"]


@pytest.mark.django_db(transaction=True)
def test_quick_rllib_training_against_the_league_submits_checkpoints(
    live_server, data_dir, env, alice, bob, token, monkeypatch, tmp_path
):
    _publish(bob, env, "mini", "minimax", data_dir)
    _publish(bob, env, "rand", "random", data_dir)
    monkeypatch.setenv("RL_ARENA_TOKEN", token)
    train = _train_module()
    out = tmp_path / "out"
    args = train.parse_args(
        [
            *("--quick", "--server", live_server.url, "--cache", str(tmp_path / "cache"), "--out", str(out)),
            *("--submit-every", "200", "--name", "rllib-bot", "--minimax-depth", "0", "--poll", "0"),
        ]
    )
    report = train.train(args)

    # it played the arena's agents, fetched and run in the local sandbox
    assert set(report["league"]) >= {"mini", "rand"}
    assert sum(r["games"] for name, r in report["league"].items() if name in ("mini", "rand")) > 0
    assert report["steps"] >= 400
    # a checkpoint submitted after each iteration that crossed 200 more steps, each a complete agent folder
    revisions = Revision.objects.filter(competitor__name="rllib-bot", competitor__owner=alice).order_by(
        "version"
    )
    steps = [cp["step"] for cp in report["checkpoints"]]
    assert len(steps) == 2 and 200 <= steps[0] < 400 <= steps[1]
    assert [r.id for r in revisions] == [cp["revision_id"] for cp in report["checkpoints"]]
    with zipfile.ZipFile(data_dir / revisions.last().zip_path) as zf:
        assert {"player.py", "requirements.txt", "model.onnx", "model.npz"} <= set(zf.namelist())
    assert json.loads((out / "training.json").read_text())["steps"] == report["steps"]

    # the exported folder is an agent the arena accepts: its smoke test, ONNX and numpy agreeing
    assert cli.main(["check", "--env", "connect-four", str(out), "--no-bwrap"], out=io.StringIO()) == 0
    sys.path.insert(0, str(out))
    try:
        player = importlib.import_module("player")
        onnx_policy, numpy_policy = player.load_policy(str(out)), player.NumpyPolicy(str(out / "model.npz"))
    finally:
        sys.path.remove(str(out))
        sys.modules.pop("player", None)
    assert type(onnx_policy).__name__ == "OnnxPolicy"
    x = (np.random.default_rng(0).random((32, 6, 7, 2)) > 0.6).astype(np.float32)
    assert np.abs(onnx_policy.logits(x) - numpy_policy.logits(x)).max() < 1e-4
