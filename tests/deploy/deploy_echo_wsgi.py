"""A tiny WSGI app for the nginx tests: echoes the request as JSON, or answers with X-Accel-Redirect.

Run by a real gunicorn behind a real nginx, so the tests can see exactly which headers reach the app.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable


def app(environ: dict, start_response: Callable) -> Iterable[bytes]:
    """``/accel/<path>`` answers with ``X-Accel-Redirect: /_protected/<path>``; anything else echoes."""
    path = environ.get("PATH_INFO", "")
    if path.startswith("/accel/"):
        start_response("200 OK", [("X-Accel-Redirect", "/_protected/" + path[len("/accel/") :])])
        return [b""]
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    echo = {
        "path": path,
        "host": environ.get("HTTP_HOST"),
        "x_forwarded_for": environ.get("HTTP_X_FORWARDED_FOR"),
        "x_forwarded_proto": environ.get("HTTP_X_FORWARDED_PROTO"),
        "x_real_ip": environ.get("HTTP_X_REAL_IP"),
        "wsgi_url_scheme": environ.get("wsgi.url_scheme"),
        "body_bytes": len(body),
    }
    payload = json.dumps(echo).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
    return [payload]
