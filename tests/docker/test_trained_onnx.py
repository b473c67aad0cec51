"""The trained Connect Four example runs as trained: its requirements.txt declares onnxruntime, the builder
installs it (wheels from PyPI through the shared cache, no network in the build) and the agent plays
through ONNX Runtime in the Docker sandbox."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from dockertest_support import RANDOM_PLAYER, REPO, containers_with_label, zip_folder

from builder import BuildResult, build_submission
from run_duel.api import LaunchSpec, play_duel, validate_duel_json
from run_duel.sandbox.docker_client import get_client

pytestmark = pytest.mark.docker

TRAINED = REPO / "example_players" / "trained_connect_four"


@pytest.fixture(scope="module")
def trained(base_image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuildResult]:
    work = tmp_path_factory.mktemp("onnx")
    result = build_submission(
        zip_folder(TRAINED, work / "trained.zip"), backend="docker", work_dir=work, registry=None
    )
    assert result.ok, f"{result.error}\n{result.log[-3000:]}"
    yield result


def _random_image(work: Path) -> str:
    result = build_submission(
        zip_folder(RANDOM_PLAYER, work / "random.zip"), backend="docker", work_dir=work, registry=None
    )
    assert result.ok, result.error
    return result.agent_ref


def test_the_trained_agent_installs_onnxruntime_and_plays_through_it_in_docker(
    trained: BuildResult, base_image: str, docker_sandbox, tmp_path: Path
) -> None:
    packages = dict(trained.packages)
    assert "onnxruntime" in packages and "numpy" in packages, trained.packages
    base_size = get_client().images.get(base_image).attrs["Size"]
    assert trained.image_size_bytes > base_size  # the installed packages are in the image

    label = f"onnx-{uuid.uuid4().hex[:8]}"
    duel = play_duel(
        "connect-four",
        docker_sandbox,
        LaunchSpec(agent=trained.agent_ref, labels={"duel": label, "seat": "1"}),
        LaunchSpec(agent=_random_image(tmp_path), labels={"duel": label, "seat": "2"}),
        matches=2,
    )
    validate_duel_json(duel)
    assert duel["player_1_errors"] == duel["player_2_errors"] == duel["other_errors"] == 0, duel["error_msg"]
    assert f"policy on onnxruntime {packages['onnxruntime']}" in duel["player_1_log"], duel["player_1_log"][
        -2000:
    ]
    assert containers_with_label("duel", label) == []
