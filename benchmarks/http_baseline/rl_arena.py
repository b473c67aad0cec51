"""The rl-arena transport as its users ran it, rebuilt faithfully as the baseline of the duel benchmarks.

What rl-arena did (school-of-ai-angers/rl-arena: ``run_duel/remote_player.py``,
``builder/image/Dockerfile``, ``run_duel/docker-compose.yml``):

* each player's image ran a Flask app under gunicorn (``gunicorn -b 0.0.0.0 _apify:app``: port 8000, one
  sync worker, which closes the connection after every response), with ``/health-check``, ``/start``,
  ``/step`` and ``/end``;
* the referee reached it at the container's address on a Docker network (no published port), one
  ``requests.post`` per move (a new TCP connection each time), JSON bodies;
* the container got the game's CPU limit (``cpus``) and memory limit;
* after starting the container the referee polled ``GET /health-check`` every 0.5 s, for up to 30 s.

Here: the same, on the same agent image as ours (Flask and gunicorn ``pip install --target``-ed on this
host and copied in, precompiled), with the same lock-down as our containers where it does not prevent
serving HTTP (read-only root, small /tmp, no capabilities, no-new-privileges, uid 10001, pids cap), and
the same minimal referee loop as ``baseline.play_http_duel`` (legality check only: lighter than ours).
Benchmark use only.
"""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import requests
from docker.errors import ImageNotFound

from run_duel.sandbox.docker_client import get_client

REQUIREMENTS = ("flask>=3,<4", "gunicorn>=22,<24")
PORT = 8000
HEALTH_CHECK_INTERVAL_S = 0.5
MAX_HEALTH_CHECK_S = 30.0
CALL_TIMEOUT_S = 10.0

#: rl-arena's ``_apify.py`` in substance: the user's Player behind four routes.
APP = '''"""Benchmark only: the rl-arena player app (Flask, served by gunicorn)."""
import importlib
import os
import sys

import numpy as np
from flask import Flask, jsonify, request

sys.path.insert(0, "/agent")
os.chdir("/agent")
PLAYER = importlib.import_module("player").Player(False)
app = Flask(__name__)


def _action(value):
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.ndarray) and value.size == 1:
        return int(value.reshape(()).item())
    return value


@app.get("/health-check")
def health_check():
    return "ok"


@app.post("/start")
def start():
    body = request.get_json()
    action = PLAYER.start(np.asarray(body["state"]), np.asarray(body["valid_actions"]))
    return jsonify(action=_action(action))


@app.post("/step")
def step():
    body = request.get_json()
    action = PLAYER.step(np.asarray(body["state"]), np.asarray(body["valid_actions"]), body["prev_reward"])
    return jsonify(action=_action(action))


@app.post("/end")
def end():
    body = request.get_json()
    PLAYER.end(np.asarray(body["state"]), body["prev_reward"])
    return jsonify()
'''


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def build_image(agent_image: str) -> tuple[str, str]:
    """``agent_image`` + Flask + gunicorn serving the app; returns (tag, "flask X, gunicorn Y")."""
    client = get_client()
    base_id = client.api.inspect_image(agent_image)["Id"]
    key = hashlib.sha256("\0".join((base_id, APP, *REQUIREMENTS)).encode()).hexdigest()[:16]
    tag = f"rl-arena-bench-rl-arena:{key}"
    try:
        labels = client.api.inspect_image(tag)["Config"]["Labels"] or {}
        return tag, labels.get("versions", "?")
    except ImageNotFound:
        pass  # not built yet
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--target", str(site), *REQUIREMENTS], check=True
        )
        versions = ", ".join(
            next(site.glob(f"{name}-*.dist-info")).name.removesuffix(".dist-info").replace("-", " ")
            for name in ("flask", "gunicorn")
        )
        dockerfile = (
            f"FROM {agent_image}\nUSER 0\nCOPY site/ /opt/baseline/site/\nCOPY app.py /opt/baseline/\n"
            "RUN python3 -m compileall -q /opt/baseline >/dev/null\n"
            f'LABEL versions="{versions}"\nUSER 10001:10001\n'
            "ENV PYTHONPATH=/opt/baseline/site:/opt/baseline\n"
            f'ENTRYPOINT ["python3", "-m", "gunicorn", "-b", "0.0.0.0:{PORT}", "app:app"]\n'
        )
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            _add(tar, "Dockerfile", dockerfile.encode())
            _add(tar, "app.py", APP.encode())
            tar.add(site, arcname="site")
        buffer.seek(0)
        for item in client.api.build(fileobj=buffer, custom_context=True, tag=tag, rm=True, decode=True):
            if "error" in item:
                raise RuntimeError(f"building the rl-arena baseline image failed: {item['error']}")
    return tag, versions


class RemotePlayer:
    """One player container on the bridge network, reached at its address (rl-arena's RemotePlayer)."""

    def __init__(self, image: str, *, cpus: float, memory_mb: int) -> None:
        api = get_client().api
        self.api = api
        host_config = api.create_host_config(
            read_only=True,
            tmpfs={"/tmp": "rw,noexec,nosuid,size=64m"},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=64,
            mem_limit=memory_mb * 1024 * 1024,
            memswap_limit=memory_mb * 1024 * 1024,
            nano_cpus=int(cpus * 1e9),
            init=True,
        )
        self.container_id = api.create_container(
            image, user="10001:10001", host_config=host_config, labels={"rl-arena": "bench"}
        )["Id"]
        api.start(self.container_id)
        address = api.inspect_container(self.container_id)["NetworkSettings"]["IPAddress"]
        self.url = f"http://{address}:{PORT}"
        deadline = time.time() + MAX_HEALTH_CHECK_S
        while time.time() < deadline:
            try:
                if requests.get(f"{self.url}/health-check", timeout=CALL_TIMEOUT_S).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(HEALTH_CHECK_INTERVAL_S)
        raise RuntimeError("the player failed its initial health check")

    def _request(self, route: str, body: dict[str, Any]) -> dict[str, Any]:
        response = requests.post(f"{self.url}/{route}", json=body, timeout=CALL_TIMEOUT_S)
        if response.status_code != 200:
            raise RuntimeError(f"call to {route} failed")
        return response.json()

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        """Our protocol message as rl-arena's route and body (``baseline.play_http_duel`` drives it)."""
        kind = message["type"]
        if kind == "start":
            return self._request(
                "start", {"state": message["state"], "valid_actions": message["valid_actions"]}
            )
        if kind == "step":
            body = {"state": message["state"], "valid_actions": message["valid_actions"], "prev_reward": 0.0}
            return self._request("step", body)
        self._request("end", {"state": message["state"], "prev_reward": message["reward"]})
        return {"type": "ended"}

    def kill(self) -> None:
        """Remove the container."""
        self.api.remove_container(self.container_id, force=True)
