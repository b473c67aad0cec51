"""The OLD transport, rebuilt honestly for comparison: one HTTP server per player, one request per move.

This is how the original rl-arena ran agents (a Flask app in each player's container, the referee POSTing
every move). Here the server is the standard library's ``ThreadingHTTPServer`` (what Flask's development
server does too), inside the same agent image, speaking the same JSON messages as our harness::

    POST /  body = {"type": "start"|"step"|"end"|"close", ...}  ->  reply body = the harness's reply

Benchmark use only; never part of the platform.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

PLAYER = None


def _action(value: object) -> object:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.ndarray) and value.size == 1:
        return int(value.reshape(()).item())
    return value


class Handler(BaseHTTPRequestHandler):
    """Answers one protocol message per POST."""

    protocol_version = "HTTP/1.1"  # keep-alive when the client wants it
    # Buffer each response so that headers and body leave in one segment (flushed after every request):
    # separate small writes on a kept-alive connection meet Nagle + delayed ACK and cost ~40 ms each.
    wbufsize = 65536

    def do_GET(self) -> None:  # readiness probe
        self._reply(b'{"type":"ready"}')

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        msg = json.loads(self.rfile.read(length))
        kind = msg["type"]
        if kind == "step":
            reply = {
                "type": "action",
                "action": _action(
                    PLAYER.step(
                        np.asarray(msg["state"]),
                        np.asarray(msg["valid_actions"], dtype=np.int64),
                        msg["reward"],
                    )
                ),
            }
        elif kind == "start":
            reply = {
                "type": "action",
                "action": _action(
                    PLAYER.start(np.asarray(msg["state"]), np.asarray(msg["valid_actions"], dtype=np.int64))
                ),
            }
        elif kind == "end":
            PLAYER.end(np.asarray(msg["state"]), msg["reward"])
            reply = {"type": "ended"}
        else:
            reply = {"type": "closed"}
        self._reply(json.dumps(reply, separators=(",", ":")).encode())

    def _reply(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # Flask logs every request to stderr; we spare the benchmark that cost


def main() -> int:
    global PLAYER
    parser = argparse.ArgumentParser()
    parser.add_argument("--agent-dir", default="/agent")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args()
    sys.path.insert(0, args.agent_dir)
    os.chdir(args.agent_dir)
    PLAYER = importlib.import_module("player").Player(False)
    server = ThreadingHTTPServer(("0.0.0.0", args.port), Handler)
    server.daemon_threads = True
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
