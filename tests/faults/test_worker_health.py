"""Infrastructure failures: a worker whose Docker engine does not answer takes no job and burns no
attempt; a fault that follows a job across healthy workers ends it FAILED after backoff, and it is
retried automatically once the fault clears.

The worker reaches the (real) engine through a Unix-socket proxy the test cuts and restores, so the
engine keeps serving the other tests while this worker sees it gone.
"""

from __future__ import annotations

import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from core_testlib import wait_for
from faultlib import CuttableProxy, docker_socket, unix_proxy

from core.actions import schedule_duel
from core.jobs import health
from core.management.commands.queue_status import queue_status
from core.models import Duel, WorkerStatus
from duel_runner.tasks import run_duel
from run_duel.sandbox import docker_client

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.redis]


@pytest.fixture
def engine_proxy() -> Iterator[CuttableProxy]:
    """A cuttable proxy in front of the Docker engine's socket (short path: Unix sockets allow 108 bytes)."""
    if subprocess.run(["docker", "info"], capture_output=True).returncode:
        pytest.skip("no Docker engine")
    folder = Path(tempfile.mkdtemp(prefix="eng-"))
    proxy = unix_proxy(folder / "docker.sock", docker_socket())
    yield proxy
    proxy.cut()
    (folder / "docker.sock").unlink(missing_ok=True)
    folder.rmdir()


@pytest.fixture
def docker_players(settings, eligible, transactional_db):
    settings.SANDBOX = "docker"
    return eligible("random", name="a"), eligible("random", name="b")


def duel_row(duel_id: int) -> dict:
    return Duel.objects.values("state", "attempts", "generation", "failure_reason", "retry_rounds").get(
        pk=duel_id
    )


def test_a_worker_whose_engine_does_not_answer_takes_no_duel_and_resumes_by_itself(
    start_worker, docker_players, engine_proxy
):
    engine_proxy.cut()
    worker = start_worker(
        SANDBOX="docker",
        DOCKER_HOST=f"unix://{engine_proxy.address}",
        WORKER_HEALTH_INTERVAL_SECONDS="0.5",
        MAX_ATTEMPTS="1",  # a single counted failure would end the duel FAILED
    )
    wait_for(
        lambda: WorkerStatus.objects.filter(healthy=False).exists(), 60, "the worker to report unhealthy"
    )
    status = WorkerStatus.objects.get()
    assert "docker" in status.problem.lower() or "engine" in status.problem.lower(), status.problem
    listed = queue_status()["workers"]
    assert [(w["name"], w["healthy"]) for w in listed] == [(status.name, False)], listed
    duel = schedule_duel(*docker_players, num_matches=2)
    wait_for(lambda: "Canceling queue" in worker.log(), 60, "the worker to stop consuming")
    engine_proxy.restore()
    wait_for(lambda: WorkerStatus.objects.filter(healthy=True).exists(), 60, "the worker to recover")
    wait_for(lambda: duel_row(duel.pk)["state"] in ("FINISHED", "FAILED"), 120, "the duel to be played")
    row = duel_row(duel.pk)
    assert (row["state"], row["attempts"], row["generation"]) == ("FINISHED", 1, 1), row
    assert "healthy again" in worker.log()


def test_an_engine_lost_mid_job_does_not_count_against_the_duel(
    docker_players, engine_proxy, settings, monkeypatch
):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{engine_proxy.address}")
    monkeypatch.setattr(docker_client, "_client", None)  # this process's client now goes through the proxy
    settings.MAX_ATTEMPTS = 1  # a counted failure would end the duel FAILED
    settings.RETRY_BACKOFF_SECONDS = 0.5
    settings.WORKER_HEALTH_INTERVAL_SECONDS = 3600  # the check before the claim sees the engine answer...
    assert health.probe_now() is None
    duel = schedule_duel(*docker_players, num_matches=2)
    engine_proxy.cut()  # ...and the engine is gone by the time the duel starts its agents
    assert run_duel(duel.pk) == "infrastructure error"
    row = duel_row(duel.pk)
    assert (row["state"], row["attempts"]) == ("QUEUED", 0), row
    assert "not counted: the worker was unhealthy" in row["failure_reason"]
    engine_proxy.restore()
    health.probe_now()
    wait_for(lambda: run_duel(duel.pk) != "not claimed", 30, "the backoff to end")
    row = duel_row(duel.pk)
    assert (row["state"], row["attempts"], row["generation"]) == ("FINISHED", 1, 2), row


def test_a_lost_agent_image_is_rebuilt_from_its_zip_while_the_duel_waits(start_worker, docker_players):
    a, b = docker_players
    missing = f"rl-arena-agent:missing-{uuid.uuid4().hex[:8]}"
    type(b).objects.filter(pk=b.pk).update(agent_ref=missing)  # its image is gone from every engine
    start_worker(SANDBOX="docker", MAX_ATTEMPTS="1", RETRY_BACKOFF_SECONDS="0.5")
    duel = schedule_duel(a, b, num_matches=2)
    wait_for(lambda: duel_row(duel.pk)["state"] in ("FINISHED", "FAILED"), 120, "the duel to be played")
    row = duel_row(duel.pk)
    assert (row["state"], row["attempts"]) == ("FINISHED", 1), row  # waiting cost no attempt
    assert "is being rebuilt from its zip" in row["failure_reason"]
    b.refresh_from_db()
    assert b.state == "ELIGIBLE" and b.agent_ref != missing
    rebuild = b.builds.order_by("-pk").first()
    assert rebuild.state == "SUCCEEDED" and rebuild.failure_reason.startswith("rebuild: ")


def test_a_fault_that_follows_a_duel_fails_it_after_backoff_and_it_is_retried_once_cleared(
    start_worker, docker_players
):
    missing = f"rl-arena-agent:missing-{uuid.uuid4().hex[:8]}"
    a, b = docker_players
    real_image = a.agent_ref
    # An image no engine has, of a revision with no zip to rebuild it from: nothing the platform can repair.
    type(b).objects.filter(pk=b.pk).update(agent_ref=missing, zip_path="")
    start_worker(
        SANDBOX="docker",
        MAX_ATTEMPTS="2",
        RETRY_BACKOFF_SECONDS="2",
        FAILED_RETRY_SECONDS="3",
        FAILED_RETRY_ROUNDS="1",
    )
    duel = schedule_duel(a, b, num_matches=2)
    backing_off = Duel.objects.filter(pk=duel.pk, state="QUEUED", attempts=1, not_before__isnull=False)
    wait_for(backing_off.exists, 60, "the duel to back off after its first failure", interval=0.05)
    wait_for(lambda: duel_row(duel.pk)["state"] == "FAILED", 120, "the duel to fail on a healthy worker")
    row = duel_row(duel.pk)
    assert row["attempts"] == 2 and "not counted" not in row["failure_reason"], row
    subprocess.run(["docker", "tag", real_image, missing], check=True)  # the fault clears
    try:
        wait_for(lambda: duel_row(duel.pk)["state"] == "FINISHED", 120, "the automatic retry")
    finally:
        subprocess.run(["docker", "rmi", missing], capture_output=True)
    row = duel_row(duel.pk)
    assert row["retry_rounds"] == 1 and Duel.objects.get(pk=duel.pk).other_errors == 0
