"""The Ray RLlib example (example_players/train_rllib_connect_four) in quick mode against a live
arena: its public agents fetched as the league, checkpoints submitted from the training loop through the
client; the exported folder passes the arena's smoke test and plays its ONNX model. The same script
against a Ray cluster started with ``ray start --head`` (one env runner on it)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.web.test_client_league import _publish
from tests.web.training_lib import (
    check_exported_agent,
    checkpoint_revisions,
    league_played,
    login,
    quick_args,
    train_module,
    wait_for,
    zip_names,
)

pytest.importorskip("ray.rllib")
pytest.importorskip("torch")


@pytest.fixture
def token(monkeypatch, tmp_path, live_server, alice, settings):
    """Alice logged in with the client. The arena runs the Docker sandbox, whose builder installs the
    checkpoints' onnxruntime (a local-sandbox arena refuses them)."""
    settings.SANDBOX = "docker"
    return login(live_server.url, monkeypatch, tmp_path)


@pytest.mark.django_db(transaction=True)
def test_quick_rllib_training_against_the_league_submits_checkpoints(
    live_server, data_dir, env, alice, bob, token, tmp_path
):
    _publish(bob, env, "mini", "minimax", data_dir)
    _publish(bob, env, "rand", "random", data_dir)
    train = train_module("train_rllib_connect_four")
    args = quick_args(train, live_server.url, tmp_path, "--submit-every", "200", "--name", "rllib-bot")
    report = train.train(args)

    assert league_played(report, {"mini", "rand"})  # fetched, run in the local sandbox
    assert report["steps"] >= 400
    # a checkpoint submitted after each iteration that crossed 200 more steps, each a complete agent folder
    steps = [cp["step"] for cp in report["checkpoints"]]
    assert len(steps) == 2 and 200 <= steps[0] < 400 <= steps[1]
    revisions = checkpoint_revisions(report, alice, "rllib-bot")
    assert {"player.py", "requirements.txt", "model.onnx", "model.npz"} <= zip_names(data_dir, revisions[-1])
    check_exported_agent(tmp_path / "out", report)


def _kill_session(sid: int) -> None:
    """SIGKILL every process left in session ``sid`` (the Ray head this test started, and its workers)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid:  # after the name: state, ppid, pgrp, session
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(stat.parent.name), signal.SIGKILL)


@pytest.fixture
def ray_head(tmp_path):
    """A one-node Ray cluster started as a user starts one (``ray start --head``); its address."""
    temp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))  # Ray's socket paths must stay short
    log = tmp_path / "ray-head.log"
    ray = Path(sys.executable).with_name("ray")
    cmd = [str(ray), "start", "--head", "--port", "0", "--num-cpus", "2", "--include-dashboard", "false"]
    cmd += ["--disable-usage-stats", "--temp-dir", str(temp), "--block"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        found = wait_for(
            lambda: re.search(r"ray start --address='([^']+)'", log.read_text()) or proc.poll() is not None,
            180,
            "the Ray head to start",
        )
        if proc.poll() is not None:
            pytest.fail("ray start --head exited:\n" + log.read_text()[-3000:])
        yield found.group(1)
    finally:
        _kill_session(proc.pid)
        proc.wait(timeout=30)
        shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.django_db(transaction=True)
def test_the_same_script_samples_on_a_ray_cluster(
    live_server, data_dir, env, bob, ray_head, monkeypatch, tmp_path
):
    _publish(bob, env, "rand", "random", data_dir)
    monkeypatch.setenv("RAY_ADDRESS", ray_head)  # as docs/TRAINING.md says; --address works the same
    monkeypatch.setenv("RAY_AUTH_MODE", "token")  # ray start turns token authentication on
    train = train_module("train_rllib_connect_four")
    report = train.train(quick_args(train, live_server.url, tmp_path, "--env-runners", "1"))

    assert f"Ray cluster at {ray_head}: 2 CPUs" in report["log"]
    assert report["env_runners"] == 1 and report["steps"] >= 400
    # the episodes were played by the env runner on the cluster, against the league it fetched itself
    assert league_played(report, {"rand"})
    assert (tmp_path / "out" / "model.onnx").is_file()
