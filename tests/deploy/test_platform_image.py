"""The platform image: builds here from the local base image, imports the project, runs as non-root."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest
from deploy_helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.docker]

IMAGE = os.environ.get("PLATFORM_IMAGE", "rl-arena:dev")
SECRET = "tests-only-secret-key-that-is-long-enough-0123456789"


@pytest.fixture(scope="module")
def platform_image(docker_engine: str) -> str:
    """scripts/build_platform_image.sh (a no-op when the image of the same inputs exists)."""
    done = subprocess.run(
        [str(REPO / "scripts" / "build_platform_image.sh")],
        cwd=REPO, capture_output=True, text=True, timeout=1800, env={**os.environ, "PLATFORM_IMAGE": IMAGE},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return IMAGE


def docker_run(
    image: str, *command: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`docker run --rm` with ``command``, no network."""
    env_args = [arg for key, value in (env or {}).items() for arg in ("-e", f"{key}={value}")]
    return subprocess.run(
        ["docker", "run", "--rm", "--network", "none", *env_args, image, *command],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_the_image_imports_django_and_the_project(platform_image: str) -> None:
    done = docker_run(platform_image, "python", "-c", "import django, core, celery, gunicorn; print('ok')")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_processes_run_as_an_unprivileged_user(platform_image: str) -> None:
    done = docker_run(platform_image, "id", "-u")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() != "0"


def test_no_secret_is_baked_into_the_image(platform_image: str) -> None:
    config = json.loads(subprocess.check_output(["docker", "image", "inspect", platform_image]))[0]["Config"]
    names = {item.split("=", 1)[0] for item in config["Env"]}
    assert not names & {"SECRET_KEY", "DATABASE_URL", "POSTGRES_PASSWORD", "REDIS_PASSWORD"}
    done = docker_run(platform_image, "sh", "-c", "ls /app/.env /app/data 2>/dev/null; true")
    assert done.stdout.strip() == ""


def test_static_files_are_collected_at_build_time(platform_image: str) -> None:
    done = docker_run(platform_image, "test", "-s", "/app/staticfiles/admin/css/base.css")
    assert done.returncode == 0


def test_the_image_declares_a_healthcheck(platform_image: str) -> None:
    config = json.loads(subprocess.check_output(["docker", "image", "inspect", platform_image]))[0]["Config"]
    assert config["Healthcheck"]["Test"][0] == "CMD-SHELL"


@pytest.fixture
def web_container(platform_image: str) -> Iterator[str]:
    """The image's default command (gunicorn) in a detached container with a throwaway secret."""
    name = f"rl-arena-test-web-{uuid.uuid4().hex[:8]}"
    subprocess.run(
        ["docker", "run", "-d", "--name", name, "--network", "none", "-e", f"SECRET_KEY={SECRET}",
         "-e", "ALLOWED_HOSTS=127.0.0.1,localhost", platform_image],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    yield name
    subprocess.run(["docker", "rm", "-f", "-v", name], capture_output=True, timeout=60)


def test_the_default_command_serves_the_web_app_with_gunicorn(web_container: str) -> None:
    probe = (
        "import urllib.request, urllib.error\n"
        "try:\n"
        "    print(urllib.request.urlopen('http://127.0.0.1:8000/admin/login/', timeout=5).status)\n"
        "except urllib.error.HTTPError as e:\n"
        "    print(e.code)\n"
    )
    status = ""
    for _ in range(120):
        done = subprocess.run(
            ["docker", "exec", web_container, "python", "-c", probe],
            capture_output=True,
            text=True,
            timeout=30,
        )
        status = done.stdout.strip()
        if done.returncode == 0 and status:
            break
        time.sleep(0.5)
    logs = subprocess.run(["docker", "logs", web_container], capture_output=True, text=True).stderr
    assert status == "200", logs[-3000:]
    assert "gunicorn" in logs.lower() or "Booting worker" in logs
