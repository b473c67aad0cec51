"""One shared Docker SDK client per process (creating one costs a version round trip).

Both the Docker sandbox and the builder use it. ``docker_available()`` answers whether an engine is
reachable without raising.
"""

from __future__ import annotations

import os
import threading

import docker
from docker.errors import DockerException

_lock = threading.Lock()
_client: docker.DockerClient | None = None
_client_pid: int | None = None


def get_client() -> docker.DockerClient:
    """Return the process-wide client (re-created after ``fork``), negotiating the API version once."""
    global _client, _client_pid
    with _lock:
        if _client is None or _client_pid != os.getpid():
            _client = docker.from_env(version="auto", timeout=120)
            _client_pid = os.getpid()
        return _client


def docker_available() -> bool:
    """True if a Docker engine answers a ping."""
    try:
        return bool(get_client().ping())
    except (DockerException, OSError):
        return False
