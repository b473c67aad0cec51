"""A fleet on one machine: private Docker engines ("nodes"), one real Celery worker per engine, one beat.

Each node is what one worker machine of a deployment has:

- its own Docker engine and containerd (``scripts/start_docker_node.sh NAME``: own data root, exec root,
  socket and pidfile; the main engine is never touched);
- one ``celery -A core worker`` whose ``DOCKER_HOST`` is that engine, ``SANDBOX=docker``, the shared
  ``AGENT_REGISTRY``, and a runtime folder of its own (socket folders, CPU slots, image-pull locks are per
  host);
- its own host name: the worker runs in a UTS namespace of its own (``unshare --uts``), so the rows it
  claims (``Duel.worker`` is ``host:pid:thread``) and its ``WorkerStatus.host`` say which node it is, as
  they would on separate machines;
- its own ``DATA_DIR`` (``Node.data_dir``, empty at start): no disk is shared.

What the nodes share is what machines of a fleet share: PostgreSQL (uploads included: the upload store,
``core/blobs.py``), Redis and the registry.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
NODE_SCRIPT = REPO / "scripts" / "start_docker_node.sh"
REGISTRY_SCRIPT = REPO / "scripts" / "ensure_registry.sh"
BASE_IMAGE_SCRIPT = REPO / "scripts" / "build_base_image.sh"
#: Node names of this suite: ``ct<pid of the pytest process><letter>``; leftovers of a run that died are
#: recognised by their pid and purged by the next run.
NODE_PREFIX = "ct"
#: ``python -c LAUNCH HOSTNAME PROGRAM ARGS...``: asks for SIGKILL when the test process dies (a worker
#: left running would take the next run's duels; the request survives exec), sets the host name when one
#: is given (inside the worker's own UTS namespace), then becomes PROGRAM.
LAUNCH = (
    "import ctypes, os, signal, socket, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG\n"
    "if sys.argv[1]:\n"
    "    socket.sethostname(sys.argv[1])\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)


def run_script(*args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
    """Run one of the project's scripts; its stdout, or the test fails with its stderr."""
    done = subprocess.run(
        ["bash", *args], capture_output=True, text=True, env={**os.environ, **(env or {})}, check=False
    )
    if check and done.returncode != 0:
        pytest.fail(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout.strip()


def wait_until(
    predicate: Callable[[], Any],
    timeout: float,
    what: str,
    *,
    interval: float = 0.2,
    details: Callable[[], str] | None = None,
) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail naming ``what`` (and ``details()``, e.g.
    the workers' logs) after ``timeout`` s. The bound only turns a hang into a failure."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(
                f"timed out after {timeout:g}s waiting for {what}" + (f"\n{details()}" if details else "")
            )
        time.sleep(interval)


def purge_leftover_nodes() -> list[str]:
    """Purge nodes of earlier runs of this suite whose pytest process is gone; returns their names."""
    purged = []
    for name in run_script(str(NODE_SCRIPT), "--list").split():
        if not (name.startswith(NODE_PREFIX) and name[len(NODE_PREFIX) : -1].isdigit()):
            continue
        if Path(f"/proc/{name[len(NODE_PREFIX) : -1]}").exists():
            continue  # a run in progress
        run_script(str(NODE_SCRIPT), name, "--purge", check=False)
        purged.append(name)
    return purged


@dataclass
class Process:
    """A long-running subprocess in its own process group, its output in ``log_path``."""

    proc: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        """Warm shutdown (SIGTERM to the group), then SIGKILL if it lingers."""
        for sig, wait_s in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=wait_s)
                break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # pool children that outlived their parent


def spawn(cmd: list[str], env: dict[str, str], log_path: Path) -> Process:
    """Start ``cmd`` in a process group of its own, its output appended to ``log_path``."""
    with open(log_path, "ab") as log_file:
        proc = subprocess.Popen(
            cmd,
            cwd=REPO,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Process(proc, log_path)


@dataclass
class Node:
    """One machine of the fleet: a private Docker engine and the Celery worker next to it."""

    name: str  # engine name, host name of its worker
    root: Path  # this node's folder of the test (its worker's log)
    runtime: Path  # its AGENT_RUNTIME_DIR (short: it holds Unix sockets)
    host: str = ""  # DOCKER_HOST of its engine
    worker: Process | None = None

    @property
    def data_dir(self) -> Path:
        """This node's own ``DATA_DIR`` (its worker's build scratch, spool and caches)."""
        return self.root / "data"

    @property
    def worker_name(self) -> str:
        """The Celery node name, also ``WorkerStatus.name``."""
        return f"worker@{self.name}"

    # -- the engine ------------------------------------------------------------------------------------

    def start_engine(self) -> str:
        self.host = run_script(str(NODE_SCRIPT), self.name).splitlines()[-1]
        assert self.host.startswith("unix://"), self.host
        return self.host

    def kill_engine(self) -> None:
        run_script(str(NODE_SCRIPT), self.name, "--kill")

    def engine_running(self) -> bool:
        return subprocess.run(["bash", str(NODE_SCRIPT), self.name, "--status"], check=False).returncode == 0

    def purge(self) -> str:
        """Remove the node's engine, containers, mounts and folders; ``""``, or why that failed."""
        done = subprocess.run(
            ["bash", str(NODE_SCRIPT), self.name, "--purge"], capture_output=True, text=True
        )
        return "" if done.returncode == 0 else f"purging node {self.name} failed: {done.stderr[-2000:]}"

    def docker(self) -> Any:
        """A Docker API client of this node's engine."""
        import docker

        return docker.APIClient(base_url=self.host, version="auto", timeout=30)

    def info(self) -> dict[str, Any]:
        with contextlib.closing(self.docker()) as api:
            return api.info()

    def image_digests(self, ref: str) -> list[str] | None:
        """``RepoDigests`` of image ``ref`` in this engine, ``None`` if it does not hold it."""
        from docker.errors import ImageNotFound

        with contextlib.closing(self.docker()) as api:
            try:
                return list(api.inspect_image(ref).get("RepoDigests") or [])
            except ImageNotFound:
                return None

    def duel_containers(self, duel_id: int, *, running: bool = True) -> list[dict[str, Any]]:
        """Agent containers of duel ``duel_id`` in this engine."""
        with contextlib.closing(self.docker()) as api:
            return api.containers(all=not running, filters={"label": f"rl-arena.duel={duel_id}"})

    def agent_containers(self) -> list[dict[str, Any]]:
        """Every agent container in this engine, whatever its state."""
        with contextlib.closing(self.docker()) as api:
            return api.containers(all=True, filters={"label": "rl-arena=agent"})

    def prepare_engine(self) -> None:
        """The Python agent base image in this engine (what a worker machine builds this suite's agents
        FROM), built or imported by the project's script, cached across runs by the script itself."""
        run_script(str(BASE_IMAGE_SCRIPT), "python", env={"DOCKER_HOST": self.host})

    # -- the worker ------------------------------------------------------------------------------------

    def start_worker(self, env: dict[str, str], queue: str) -> Process:
        """Start this node's Celery worker (concurrency from ``WORKER_CONCURRENCY`` in ``env``) in a UTS
        namespace whose host name is the node's name; return once it is ready."""
        self.runtime.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        worker_env = {
            **env,
            "DOCKER_HOST": self.host,
            "AGENT_RUNTIME_DIR": str(self.runtime),
            "DATA_DIR": str(self.data_dir),
        }
        cmd = ["unshare", "--uts", sys.executable, "-c", LAUNCH, self.name, sys.executable]
        cmd += ["-m", "celery", "-A", "core", "worker", "-l", "info", "-n", self.worker_name, "-Q", queue]
        cmd += ["--without-mingle", "--without-gossip"]
        worker = spawn(cmd, worker_env, self.root / "worker.log")
        self.worker = worker
        wait_until(
            lambda: " ready." in worker.log() or not worker.alive(), 120, f"{self.worker_name} to start"
        )
        if not worker.alive():
            pytest.fail(f"{self.worker_name} exited at start:\n{worker.log()[-5000:]}")
        return worker

    def log(self) -> str:
        return self.worker.log() if self.worker else ""


@dataclass
class Cluster:
    """The nodes, the beat process and what they share."""

    nodes: dict[str, Node]
    env: dict[str, str]
    queue: str
    registry: str
    data_dir: Path
    beat: Process | None = None
    agents: dict[str, Any] = field(default_factory=dict)
    #: Agent containers node B's engine held when it was killed (recorded by the kill test).
    lost_containers: set[str] = field(default_factory=set)

    def __getitem__(self, key: str) -> Node:
        return self.nodes[key]

    def diagnose(self) -> str:
        """The last lines of every worker's log, for a failure message."""
        parts = []
        for key, node in self.nodes.items():
            tail = "\n".join(node.log().splitlines()[-40:])
            parts.append(f"---- node {key} ({node.worker_name}) log tail ----\n{tail}")
        return "\n".join(parts)

    def node_of(self, worker: str) -> str:
        """The node key (``"a"``, ``"b"``) of a claimer recorded as ``host:pid:thread``; ``""`` if none."""
        host = worker.split(":", 1)[0]
        return next((key for key, node in self.nodes.items() if node.name == host), "")

    def set_consuming(self, key: str, consume: bool) -> None:
        """Tell node ``key``'s worker to stop or resume consuming the queue (Celery remote control)."""
        from core.celery import app

        node = self.nodes[key]
        call = app.control.add_consumer if consume else app.control.cancel_consumer
        replies = call(self.queue, destination=[node.worker_name], reply=True, timeout=10)
        answer = next((reply[node.worker_name] for reply in replies or [] if node.worker_name in reply), None)
        assert answer and "ok" in answer, f"{node.worker_name} did not acknowledge: {replies}"
