"""prepare_dev.sh: a first run on embedded defaults, a second run, and --stop (in a private DATA_DIR/PORT)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from deploy_helpers import REPO, free_port

pytestmark = pytest.mark.slow

ELIGIBLE_TIMEOUT_S = 420


@dataclass
class DevRun:
    """One instance of the arena started by prepare_dev.sh."""

    env: dict[str, str]
    data: Path
    port: int
    first_output: str

    def script(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(REPO / "prepare_dev.sh"), *args],
            cwd=REPO, env=self.env, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip

    def queue_status(self) -> dict:
        done = subprocess.run(
            [sys.executable, "manage.py", "queue_status", "--json"],
            cwd=REPO, env=self.env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def pid(self, name: str) -> int:
        return int((self.data / "run" / f"{name}.pid").read_text())


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module", params=["auto", "local"])
def dev_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevRun]:
    """`./prepare_dev.sh` with its own DATA_DIR, PORT and .env; stopped at the end whatever happens.

    ``auto``: SANDBOX unset (example.env leaves it empty), so the script picks the sandbox itself, and the
    development server; ``local``: SANDBOX=local, the embedded default of a machine without Docker, served
    by gunicorn (WEB_SERVER=gunicorn: the production server, static files served by Django)."""
    root = tmp_path_factory.mktemp("prepare_dev")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "CELERY_", "REDIS_"))}
    env.update(DATA_DIR=str(root / "data"), ENV_FILE=str(root / "dev.env"), PORT=str(free_port()))
    env.pop("SANDBOX", None)
    if request.param == "local":
        env["SANDBOX"] = "local"
        env["WEB_SERVER"] = "gunicorn"
    run = DevRun(env=env, data=root / "data", port=int(env["PORT"]), first_output="")
    try:
        done = run.script()
        run.first_output = done.stdout + done.stderr
        assert done.returncode == 0, run.first_output[-4000:]
        yield run
    finally:
        run.script("--stop", timeout=120)


def test_the_first_run_prints_the_url_and_an_admin_login(dev_run: DevRun) -> None:
    assert f"http://127.0.0.1:{dev_run.port}/" in dev_run.first_output
    password = (dev_run.data / "admin_password.txt").read_text().strip()
    assert re.search(rf"login admin@example\.com\s+password {re.escape(password)}", dev_run.first_output)
    assert (dev_run.data / "admin_password.txt").stat().st_mode & 0o077 == 0
    assert Path(dev_run.env["ENV_FILE"]).is_file()


def test_the_web_server_answers(dev_run: DevRun) -> None:
    with urllib.request.urlopen(f"http://127.0.0.1:{dev_run.port}/admin/login/", timeout=10) as response:
        assert response.status == 200


def test_static_files_and_game_renderers_are_served(dev_run: DevRun) -> None:
    base = f"http://127.0.0.1:{dev_run.port}"
    with urllib.request.urlopen(f"{base}/games/connect-four/", timeout=30) as response:
        page = response.read().decode()
    linked = re.findall(r'(?:href|src)="(/static/[^"]+)"', page)
    assert linked, "the page links no static file"
    for path in [*linked, "/static/games/connect-four/renderer.js"]:
        with urllib.request.urlopen(base + path, timeout=10) as response:
            assert response.status == 200, path
            assert response.read(), path


def test_the_example_players_become_eligible(dev_run: DevRun) -> None:
    deadline = time.monotonic() + ELIGIBLE_TIMEOUT_S
    revisions: dict[str, int] = {}
    while time.monotonic() < deadline:
        revisions = dev_run.queue_status()["revisions"]
        if revisions and set(revisions) == {"ELIGIBLE"}:
            break
        assert not {"FAILED", "REJECTED", "BUILD_FAILED", "TEST_FAILED"} & set(revisions), revisions
        time.sleep(2)
    worker_log = (dev_run.data / "run" / "worker.log").read_text()[-3000:]
    assert set(revisions) == {"ELIGIBLE"}, f"{revisions}\n{worker_log}"
    assert revisions["ELIGIBLE"] >= 2


def test_agents_run_in_docker_when_an_engine_answers_else_locally(dev_run: DevRun) -> None:
    from run_duel.sandbox.docker_client import docker_available

    if dev_run.env.get("SANDBOX") == "local":
        expected = "local"
        assert "sandbox: local (SANDBOX is set)" in dev_run.first_output
    else:
        expected = "docker" if docker_available() else "local"
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes") and expected != "docker":
            pytest.fail("no Docker engine answers in CI: run_tests.sh starts one")
    assert f"Agents run in:          the {expected} sandbox" in dev_run.first_output
    refs = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c",
         "from core.models import Revision; print(*Revision.objects.values_list('agent_ref', flat=True))"],
        cwd=REPO, env=dev_run.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert refs.returncode == 0, refs.stderr
    built = refs.stdout.split()
    assert built, "no example player was built"
    registry = "agent images: pushed to and pulled from the registry on" in dev_run.first_output
    if expected == "docker" and registry:
        # immutable references of what the builder pushed to the dev registry (scripts/ensure_registry.sh)
        assert all(re.fullmatch(r"[\w.:-]+/rl-arena-agent@sha256:[0-9a-f]{64}", ref) for ref in built), built
    elif expected == "docker":  # image names, not folders
        assert all(ref.startswith("rl-arena-agent") and ":" in ref for ref in built), built
    else:
        assert all(Path(ref).is_dir() for ref in built), built


def test_a_crashed_worker_is_restarted_and_the_log_says_so(dev_run: DevRun) -> None:
    supervisor = dev_run.pid("worker")
    children = lambda: subprocess.run(  # noqa: E731
        ["pgrep", "-P", str(supervisor)], capture_output=True, text=True
    ).stdout.split()
    first = children()
    assert len(first) == 1, first
    os.kill(int(first[0]), signal.SIGKILL)  # the worker dies, as on the filesystem broker's crash
    log = dev_run.data / "run" / "worker.log"
    deadline = time.monotonic() + 120
    while not (children() and children() != first and "exited with status" in log.read_text()):
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.5)
    assert alive(supervisor) and dev_run.pid("worker") == supervisor
    assert "worker exited with status 137: restarting it" in log.read_text()


def test_a_second_run_restarts_cleanly_without_duplicates(dev_run: DevRun) -> None:
    before = dev_run.queue_status()["revisions"]
    old = [dev_run.pid(name) for name in ("web", "worker", "control")]
    password = (dev_run.data / "admin_password.txt").read_text()
    done = dev_run.script()
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert not any(alive(pid) for pid in old)
    assert all(alive(dev_run.pid(name)) for name in ("web", "worker", "control"))
    assert "submitted 0 revision(s)" in done.stdout + done.stderr
    assert dev_run.queue_status()["revisions"] == before
    assert (dev_run.data / "admin_password.txt").read_text() == password


def test_stop_stops_everything(dev_run: DevRun) -> None:
    pids = [dev_run.pid(name) for name in ("web", "worker", "control")]
    done = dev_run.script("--stop", timeout=120)
    assert done.returncode == 0, done.stderr
    assert not any(alive(pid) for pid in pids)
    assert not list((dev_run.data / "run").glob("*.pid"))
    assert "web: stopped" in dev_run.script("--status").stdout
