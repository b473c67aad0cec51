"""The same pipeline with SANDBOX=docker: images built by the builder, agents in containers."""

import shutil
import subprocess

import pytest

from core.actions import schedule_duel
from duel_runner.containers import sweep
from duel_runner.tasks import run_duel

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def docker_sandbox(settings):
    if shutil.which("docker") is None or subprocess.run(["docker", "info"], capture_output=True).returncode:
        pytest.skip("no Docker engine")
    settings.SANDBOX = "docker"


def test_uploads_become_images_and_duel_in_containers(eligible):
    strong, weak = eligible("minimax"), eligible("random")
    for revision in (strong, weak):
        assert revision.state == "ELIGIBLE", revision.error_message
        assert revision.agent_ref.startswith("rl-arena-agent:")  # content-addressed image name
    duel = schedule_duel(strong, weak, num_matches=4)
    assert run_duel(duel.pk) == "recorded"
    duel.refresh_from_db()
    assert duel.state == "FINISHED" and duel.other_errors == 0 and duel.matches.count() == 4


def test_the_reaper_can_sweep_orphan_agent_containers(db):
    assert sweep() >= 0
