"""Benchmark helpers for the Docker transports we did NOT choose, measured honestly beside ours.

* ``HttpPlayer``: the old rl-arena design — an HTTP server per player in a container (bridge network, port
  published on 127.0.0.1), one POST per move, a new TCP connection per request as ``requests.post`` does
  (or one kept-alive connection with ``keep_alive=True``).
* ``AttachPlayer``: our harness on stdin/stdout, reached through the Docker engine's attach stream.
* ``play_http_duel``: a minimal referee loop (legality check only) driving two ``HttpPlayer``s — lighter
  than our real referee, which favours the baseline.
"""

from __future__ import annotations

import hashlib
import http.client
import io
import json
import socket
import struct
import tarfile
import time
from pathlib import Path
from typing import Any

from docker.errors import ImageNotFound

from run_duel.sandbox.docker_client import get_client

SERVER = Path(__file__).resolve().parent / "http_agent_server.py"
LOCKDOWN = {
    "read_only": True,
    "tmpfs": {"/tmp": "rw,noexec,nosuid,size=64m"},
    "cap_drop": ["ALL"],
    "security_opt": ["no-new-privileges"],
    "pids_limit": 64,
    "mem_limit": 512 * 1024 * 1024,
    "memswap_limit": 512 * 1024 * 1024,
    "nano_cpus": 1_000_000_000,
    "init": True,
}


def build_http_image(agent_image: str) -> str:
    """An image = ``agent_image`` + the stdlib HTTP server as entrypoint (cached by content)."""
    client = get_client()
    base_id = client.api.inspect_image(agent_image)["Id"]
    key = hashlib.sha256(base_id.encode() + SERVER.read_bytes()).hexdigest()[:16]
    tag = f"rl-arena-bench-http:{key}"
    try:
        client.api.inspect_image(tag)
        return tag
    except ImageNotFound:
        pass  # not built yet
    dockerfile = (
        f"FROM {agent_image}\nCOPY http_agent_server.py /opt/baseline/\n"
        'ENTRYPOINT ["python3", "-B", "/opt/baseline/http_agent_server.py", "--agent-dir", "/agent"]\n'
    )
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in (
            ("Dockerfile", dockerfile.encode()),
            ("http_agent_server.py", SERVER.read_bytes()),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    for _ in client.api.build(fileobj=buffer, custom_context=True, tag=tag, rm=True, decode=True):
        pass
    return tag


class HttpPlayer:
    """One player container serving HTTP on a port published on 127.0.0.1."""

    def __init__(self, image: str, *, keep_alive: bool = False, ready_timeout: float = 30.0) -> None:
        api = get_client().api
        self.api = api
        host_config = api.create_host_config(port_bindings={8080: ("127.0.0.1", None)}, **LOCKDOWN)
        self.container_id = api.create_container(
            image, user="10001:10001", ports=[8080], host_config=host_config, labels={"rl-arena": "bench"}
        )["Id"]
        api.start(self.container_id)
        self.port = int(api.port(self.container_id, 8080)[0]["HostPort"])
        self.keep_alive = keep_alive
        self._conn: http.client.HTTPConnection | None = None
        deadline = time.monotonic() + ready_timeout
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/")
                if conn.getresponse().status == 200:
                    conn.close()
                    break
            except (OSError, http.client.HTTPException):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the HTTP player never became ready")
            time.sleep(0.02)

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        """POST one message, return the decoded reply."""
        body = json.dumps(message, separators=(",", ":"))
        if self.keep_alive:
            if self._conn is None:
                self._conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                self._conn.connect()
                self._conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = self._conn
        else:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        conn.request("POST", "/", body=body, headers={"Content-Type": "application/json"})
        reply = json.loads(conn.getresponse().read())
        if not self.keep_alive:
            conn.close()
        return reply

    def kill(self) -> None:
        """Remove the container."""
        if self._conn is not None:
            self._conn.close()
        self.api.remove_container(self.container_id, force=True)


class AttachPlayer:
    """Our harness in stdio mode, driven through ``docker attach`` (multiplexed stdout frames)."""

    def __init__(self, image: str) -> None:
        api = get_client().api
        self.api = api
        host_config = api.create_host_config(network_mode="none", **LOCKDOWN)
        self.container_id = api.create_container(
            image, user="10001:10001", stdin_open=True, host_config=host_config, labels={"rl-arena": "bench"}
        )["Id"]
        sock = api.attach_socket(self.container_id, params={"stdin": 1, "stdout": 1, "stream": 1})
        self.sock: socket.socket = sock._sock
        api.start(self.container_id)
        self._buffer = b""
        assert self.recv() == {"type": "ready"}

    def send(self, message: dict[str, Any]) -> None:
        self.sock.sendall(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def recv(self) -> dict[str, Any]:
        while b"\n" not in self._buffer:
            header = self._read_exact(8)
            size = struct.unpack(">I", header[4:])[0]
            payload = self._read_exact(size)
            if header[0] == 1:  # stdout; stderr frames are ignored
                self._buffer += payload
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def _read_exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("attach stream closed")
            data += chunk
        return data

    def kill(self) -> None:
        self.sock.close()
        self.api.remove_container(self.container_id, force=True)


def play_http_duel(game: Any, players: tuple[HttpPlayer, HttpPlayer], matches: int) -> dict[str, int]:
    """Minimal referee over HTTP players: alternate who starts, check legality, send end messages."""
    tally = {"player_1_wins": 0, "player_2_wins": 0, "draws": 0, "errors": 0, "moves": 0}
    for index in range(matches):
        order = (players[index % 2], players[1 - index % 2])
        started = [False, False]
        state = game.initial_state()
        while not game.is_over(state):
            seat = game.to_move(state)
            legal = game.legal_actions(state)
            obs = game.observation(state, seat).tolist()
            if started[seat]:
                msg = {"type": "step", "state": obs, "valid_actions": legal, "reward": 0.0}
            else:
                msg = {"type": "start", "state": obs, "valid_actions": legal}
                started[seat] = True
            action = order[seat].ask(msg).get("action")
            if action not in legal:
                tally["errors"] += 1
                break
            state = game.apply(state, action)
            tally["moves"] += 1
        rewards = game.rewards(state)
        for seat in (0, 1):
            order[seat].ask(
                {"type": "end", "state": game.observation(state, seat).tolist(), "reward": rewards[seat]}
            )
        winner = game.winner(state)
        if winner is None:
            tally["draws"] += 1
        else:
            player = (index % 2) if winner == 0 else 1 - index % 2
            tally["player_1_wins" if player == 0 else "player_2_wins"] += 1
    return tally
