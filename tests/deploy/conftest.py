"""Fixtures for the deployment tests (helpers live in deploy_helpers.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from deploy_helpers import IN_CI, Service, require


@pytest.fixture
def services() -> Iterator[list[Service]]:
    """A list to append started Services to; all are stopped at teardown, last first."""
    started: list[Service] = []
    yield started
    for service in reversed(started):
        service.stop()


@pytest.fixture(scope="session")
def nginx_binary() -> str:
    """The nginx executable (Debian package ``nginx``)."""
    path = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if path is None and IN_CI and os.geteuid() == 0:
        # run_tests.sh should install it; as a fallback in CI, install Debian's package here.
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "nginx"], env=env, capture_output=True, timeout=600
        )
        path = "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    require(path is not None, "nginx is not installed (apt-get install nginx)")
    assert path is not None
    return path


@pytest.fixture(scope="session")
def docker_engine() -> str:
    """The docker CLI, with an engine that answers."""
    docker = shutil.which("docker")
    require(docker is not None, "the docker CLI is not installed (scripts/ensure_docker.sh)")
    assert docker is not None
    answers = subprocess.run([docker, "info"], capture_output=True, timeout=30).returncode == 0
    require(answers, "no Docker engine answers (scripts/ensure_docker.sh)")
    return docker
