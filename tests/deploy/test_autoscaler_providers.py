"""Autoscaler providers: real Celery worker processes (local) and the DigitalOcean dry run."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from deploy_helpers import REPO, django_env

from autoscaler.policy import QueueSnapshot, ScalingPolicy
from autoscaler.providers.digitalocean import DigitalOceanProvider, DropletSpec, create_droplet_body
from autoscaler.providers.local import LocalProvider
from autoscaler.runner import provider_from_env, step

WORKER = (sys.executable, "-m", "celery", "-A", "core", "worker", "--loglevel", "INFO", "--concurrency", "1")


def wait_until(condition, timeout_s: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


@pytest.fixture
def local_provider(tmp_path: Path) -> Iterator[LocalProvider]:
    """A LocalProvider starting real `celery -A core worker` processes on the embedded broker in tmp_path."""
    env = django_env(tmp_path / "data")
    provider = LocalProvider(tmp_path / "run", command=WORKER, env=env, cwd=REPO)
    yield provider
    for name in provider.names():
        provider.destroy(name)


def worker_ready(provider: LocalProvider, name: str) -> bool:
    return "ready." in (provider.run_dir / f"{name}.log").read_text(errors="replace")


@pytest.mark.slow
def test_the_local_provider_starts_drains_and_destroys_a_real_worker(local_provider: LocalProvider) -> None:
    (name,) = local_provider.start(1)
    pid = int((local_provider.run_dir / f"{name}.pid").read_text())
    wait_until(lambda: worker_ready(local_provider, name), 90, "the Celery worker to be ready")

    (view,) = local_provider.list_workers(frozenset())
    assert (view.name, view.state, view.busy) == (name, "running", False)

    # A job claimed by one of the worker's pool processes makes the worker busy.
    pool_child = children_of(pid)[0]
    (view,) = local_provider.list_workers(frozenset({f"{socket.gethostname()}:{pool_child}"}))
    assert view.busy
    (view,) = local_provider.list_workers(frozenset({f"another-host:{pool_child}"}))
    assert not view.busy

    local_provider.drain(name)
    wait_until(lambda: not local_provider.is_running(name), 60, "the drained worker to exit")
    (view,) = local_provider.list_workers(frozenset())
    assert (view.state, view.busy) == ("draining", False)
    local_provider.destroy(name)
    assert local_provider.list_workers(frozenset()) == []


@pytest.mark.slow
def test_autoscaling_steps_grow_and_shrink_the_local_pool(local_provider: LocalProvider) -> None:
    policy = ScalingPolicy(min_workers=0, max_workers=2, jobs_per_worker=2, min_age_before_removal_s=0)
    busy_queue = QueueSnapshot(queued=5, running=0, oldest_wait_s=1.0)
    decision = step(local_provider, policy, lambda: busy_queue)
    assert decision.start == 2
    assert len(local_provider.names()) == 2
    assert step(local_provider, policy, lambda: busy_queue).is_noop  # no duplicates on the next step

    empty = QueueSnapshot(queued=0, running=0)
    first = step(local_provider, policy, lambda: empty)
    assert len(first.drain) == 1  # one per step
    second = step(local_provider, policy, lambda: empty)
    assert len(second.drain) == 1
    assert {v.state for v in local_provider.list_workers(frozenset())} == {"draining"}

    # Drained, idle workers are destroyed by the next step, and forgotten.
    def pool_empty() -> bool:
        step(local_provider, policy, lambda: empty)
        return not local_provider.names()

    wait_until(pool_empty, 90, "the drained workers to be destroyed")


def test_a_crashed_local_worker_is_forgotten(tmp_path: Path) -> None:
    provider = LocalProvider(tmp_path, command=(sys.executable, "-c", "import sys; sys.exit(3)"))
    provider.start(1)
    wait_until(lambda: provider.list_workers(frozenset()) == [], 10, "the crashed worker to be forgotten")
    assert provider.names() == []


SPEC = DropletSpec(
    region="fra1", size="s-2vcpu-4gb", image="ubuntu-24-04-x64", tag="rl-arena-worker-auto",
    user_data="#cloud-config\npackages: [docker.io]\n", vpc_uuid="vpc-123", ssh_keys=["aa:bb"],
)  # fmt: skip


def test_the_droplet_create_body_carries_the_spec() -> None:
    body = create_droplet_body(SPEC, "w-1", SPEC.user_data)
    assert body["name"] == "w-1"
    assert body["tags"] == ["rl-arena-worker-auto"]
    assert (body["region"], body["size"], body["image"], body["vpc_uuid"]) == (
        "fra1", "s-2vcpu-4gb", "ubuntu-24-04-x64", "vpc-123",
    )  # fmt: skip
    assert body["user_data"].startswith("#cloud-config")
    assert body["ssh_keys"] == ["aa:bb"]


def test_the_digitalocean_dry_run_prints_the_calls_and_sends_nothing() -> None:
    out = io.StringIO()
    provider = DigitalOceanProvider(SPEC, "secret-token", dry_run=True, api="http://127.0.0.1:9/v2", out=out)
    names = provider.start(2)
    provider.drain("w-7")
    provider.destroy("w-7")
    lines = out.getvalue().splitlines()
    bodies = [json.loads(line.split(" ", 3)[3]) for line in lines[:2]]
    assert all(line.startswith("DRY-RUN POST http://127.0.0.1:9/v2/droplets ") for line in lines[:2])
    assert [b["name"] for b in bodies] == names and len(set(names)) == 2
    assert all(b["user_data"].startswith("<") and "cloud-init" in b["user_data"] for b in bodies)
    lines = lines[1:]
    assert lines[1].startswith("DRY-RUN POST http://127.0.0.1:9/v2/tags ")
    assert lines[2].startswith(
        "DRY-RUN POST http://127.0.0.1:9/v2/tags/rl-arena-worker-auto-draining/resources "
    )
    assert lines[3] == "DRY-RUN DELETE http://127.0.0.1:9/v2/droplets/w-7 {}"
    assert "secret-token" not in out.getvalue()


def test_a_real_digitalocean_provider_needs_a_token() -> None:
    with pytest.raises(ValueError, match="token"):
        DigitalOceanProvider(SPEC, "")


def test_the_digitalocean_provider_is_configured_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "worker.yaml").write_text("#cloud-config\nruncmd: []\n")
    for key, value in {
        "AUTOSCALER_DO_REGION": "ams3", "AUTOSCALER_DO_SIZE": "c-4", "AUTOSCALER_DO_TAG": "arena-auto",
        "AUTOSCALER_DO_USER_DATA_FILE": str(tmp_path / "worker.yaml"), "AUTOSCALER_DO_SSH_KEYS": "k1,k2",
    }.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AUTOSCALER_DO_TOKEN", raising=False)
    provider = provider_from_env("digitalocean", dry_run=True)
    assert isinstance(provider, DigitalOceanProvider)
    assert (provider.spec.region, provider.spec.size, provider.spec.tag) == ("ams3", "c-4", "arena-auto")
    assert provider.spec.ssh_keys == ["k1", "k2"]
    assert provider.spec.user_data == "#cloud-config\nruncmd: []\n"


def test_the_decide_command_explains_a_situation() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "autoscaler", "decide", "--queued", "9", "--workers", "1",
         "--max-workers", "3"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("desired=3 start=2")


@pytest.mark.slow
def test_one_dry_run_step_reads_the_database_and_prints_the_droplet_it_would_create(tmp_path: Path) -> None:
    env = django_env(tmp_path / "data", AUTOSCALER_MIN_WORKERS="1", AUTOSCALER_DO_TAG="arena-auto")
    migrated = subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert migrated.returncode == 0, migrated.stderr
    done = subprocess.run(
        [sys.executable, "-m", "autoscaler", "run", "--provider", "digitalocean", "--dry-run", "--once"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "DRY-RUN POST https://api.digitalocean.com/v2/droplets" in done.stdout
    assert '"tags": ["arena-auto"]' in done.stdout
    assert "queued=0 running=0" in done.stderr

    # The same command for real, configured from the environment, against the local API stand-in.
    from fake_digitalocean import FakeDigitalOcean
    from terraform_render import autoscaler_worker_template

    from autoscaler.join import check_ticket

    (tmp_path / "worker.yaml").write_text(autoscaler_worker_template())
    (tmp_path / "join.key").write_text("j" * 64)
    fake = FakeDigitalOcean(token="dop_v1_cli")
    api = fake.start()
    try:
        env.update(AUTOSCALER_DO_API_URL=api, AUTOSCALER_DO_TOKEN="dop_v1_cli",
                   AUTOSCALER_DO_USER_DATA_FILE=str(tmp_path / "worker.yaml"),
                   AUTOSCALER_JOIN_KEY_FILE=str(tmp_path / "join.key"))  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "autoscaler", "run", "--provider", "digitalocean", "--once"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        fake.stop()
    assert done.returncode == 0, done.stderr
    (name,) = fake.names("arena-auto")
    (user_data,) = fake.user_data.values()
    ticket = next(line.strip() for line in user_data.splitlines() if line.strip().startswith(name + "."))
    assert check_ticket("j" * 64, ticket) == (name, ticket.split(".")[1])
    assert {r.authorization for r in fake.requests} == {"Bearer dop_v1_cli"}
