"""Helpers shared by the Docker-area tests (plain functions; fixtures live in conftest.py)."""

from __future__ import annotations

import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
HOSTILE = REPO / "example_players" / "hostile"
RANDOM_PLAYER = REPO / "example_players" / "random"


def zip_folder(folder: Path, dest: Path, *, top: str | None = None) -> Path:
    """Zip ``folder``'s files (optionally under one top-level folder ``top``)."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                name = path.relative_to(folder).as_posix()
                archive.write(path, f"{top}/{name}" if top else name)
    return dest


def containers_with_label(key: str, value: str) -> list[dict]:
    """All containers (running or not) labelled ``rl-arena.<key>=<value>``."""
    from run_duel.sandbox.docker_client import get_client

    return get_client().api.containers(all=True, filters={"label": f"rl-arena.{key}={value}"})


def rss_mb() -> float:
    """Resident memory of this test process, in MB."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


#: A player that stays in play until released (see its docstring); ``release_held_agents`` releases it.
HELD_PLAYER = REPO / "tests" / "agents" / "held"


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    """Poll ``predicate`` until it returns something truthy; ``TimeoutError`` naming ``what`` after
    ``timeout`` seconds (bounded, whatever the load)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def own_engine_client() -> Any:
    """A Docker API client of the caller's own (not the sandbox's shared one), for a test's watcher
    thread."""
    import docker

    return docker.from_env(version="auto", timeout=30).api


def running_agents(api: Any, key: str, value: str) -> list[str]:
    """Ids of the running agent containers labelled ``rl-arena.<key>=<value>``."""
    found = api.containers(filters={"label": f"rl-arena.{key}={value}", "status": "running"})
    return [container["Id"] for container in found]


def agent_log(api: Any, container_id: str) -> str:
    """What the agent in ``container_id`` wrote to stderr so far ("" once it is gone)."""
    from docker.errors import NotFound

    try:
        return api.logs(container_id, stdout=True, stderr=True).decode("utf-8", errors="replace")
    except NotFound:
        return ""


def release_held_agents(api: Any, key: str, value: str) -> set[str]:
    """Release every running ``tests/agents/held`` player labelled ``rl-arena.<key>=<value>``: put a
    ``release`` file in its launch's socket folder (bind-mounted at ``/run/arena`` in its container).
    Returns the ids of the containers released (a container being removed meanwhile is skipped)."""
    from docker.errors import NotFound

    from run_duel.sandbox.docker_config import SOCKET_DIR_IN_CONTAINER

    released = set()
    for container_id in running_agents(api, key, value):
        try:
            mounts = api.inspect_container(container_id)["Mounts"]
        except NotFound:
            continue
        for mount in mounts:
            if mount["Destination"] == SOCKET_DIR_IN_CONTAINER:
                release = Path(mount["Source"]) / "release"
                try:
                    release.touch()  # the agent only looks it up: the folder's search bit is enough
                except FileNotFoundError:  # the launch ended and its folder was removed
                    continue
                released.add(container_id)
    return released
