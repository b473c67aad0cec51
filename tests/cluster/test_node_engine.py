"""A worker machine's code talks to the Docker engine its ``DOCKER_HOST`` names, and to no other.

On one machine per engine this can never be seen: the default socket and ``DOCKER_HOST`` are the same
engine. With two engines side by side (the nodes of this suite, the main engine next to them) a call that
ignores ``DOCKER_HOST`` lands in the wrong engine.
"""

from __future__ import annotations

import contextlib
import shutil
import uuid
import zipfile
from pathlib import Path

import pytest
from clusterlib import REPO, Node

pytestmark = [pytest.mark.docker, pytest.mark.slow]

MAIN_ENGINE = "unix:///var/run/docker.sock"


def unique_agent(folder: Path) -> Path:
    """The random example player with a unique comment: content no engine has built before."""
    shutil.copytree(REPO / "example_players" / "random", folder)
    with (folder / "player.py").open("a") as player:
        player.write(f"\n# {uuid.uuid4().hex}\n")
    archive = folder.with_suffix(".zip")
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in sorted(folder.iterdir()):
            if path.is_file():
                zipped.write(path, path.name)
    return archive


def test_a_build_happens_in_the_engine_docker_host_names(
    nodes: dict[str, Node], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import docker
    from docker.errors import ImageNotFound

    from builder import build_submission
    from run_duel.sandbox import docker_client

    node = nodes["a"]
    monkeypatch.setenv("DOCKER_HOST", node.host)
    monkeypatch.setattr(docker_client, "_client", None)  # this process's shared client: node A's engine
    archive = unique_agent(tmp_path / "agent")
    result = build_submission(archive, backend="docker", work_dir=tmp_path, registry=None)
    assert result.ok, result.error
    assert node.image_digests(result.agent_ref) is not None, f"{result.agent_ref} is not in node A's engine"
    if Path(MAIN_ENGINE.removeprefix("unix://")).is_socket():
        main = docker.APIClient(base_url=MAIN_ENGINE, version="auto", timeout=30)
        with contextlib.closing(main), pytest.raises(ImageNotFound):
            main.inspect_image(result.agent_ref)  # built where DOCKER_HOST says, not in the main engine
