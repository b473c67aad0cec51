"""A local stand-in for the subset of DigitalOcean's API v2 the autoscaler uses, on 127.0.0.1.

It speaks what DigitalOcean documents (docs.digitalocean.com/reference/api, the public OpenAPI spec):

- ``Authorization: Bearer <token>`` on every request, else 401 ``{"id": "Unauthorized", ...}``;
- ``GET /v2/droplets?tag_name=&page=&per_page=``: ``{"droplets": [...], "links": {"pages": {...}},
  "meta": {"total": N}}``, 20 per page by default, at most 200, ``next``/``last``/``first``/``prev`` links;
- ``POST /v2/droplets`` with ``name`` (or ``names``): 202 ``{"droplet": {...}, "links": {"actions": [...]}}``,
  422 ``unprocessable_entity`` when a required attribute is missing; new droplets are ``"status": "new"``;
- ``DELETE /v2/droplets/{id}`` and ``DELETE /v2/droplets?tag_name=``: 204, 404 ``not_found``;
- ``POST /v2/tags`` (201 ``{"tag": ...}``) and ``POST /v2/tags/{name}/resources`` (204);
- rate-limit headers (``RateLimit-Limit``/``-Remaining``/``-Reset``) on every answer, and injectable faults:
  429 ``too_many_requests`` with ``Retry-After``, 500 ``server_error``.

Test code only: it holds droplets in memory and records every request.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

REQUIRED = ("region", "size", "image")


@dataclass
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, str]
    body: dict[str, Any] | None
    authorization: str
    status: int = 0


@dataclass
class FakeDigitalOcean:
    """State of the fake account, and the HTTP server answering for it."""

    token: str
    droplets: dict[int, dict[str, Any]] = field(default_factory=dict)
    user_data: dict[int, str] = field(default_factory=dict)
    tags: set[str] = field(default_factory=set)
    requests: list[Recorded] = field(default_factory=list)
    #: Faults answered to the next matching requests, first first: (method or "*", status, Retry-After).
    faults: list[tuple[str, int, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(3_000_001))
    server: ThreadingHTTPServer | None = None

    # --- test controls -------------------------------------------------------------------------------------
    def start(self) -> str:
        """Serve on a free port of 127.0.0.1; return the API base (``http://127.0.0.1:<port>/v2``)."""
        fake = self

        class Handler(_Handler):
            state = fake

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/v2"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def boot_all(self) -> None:
        """Every ``new`` droplet becomes ``active`` (what DigitalOcean does within a minute)."""
        with self.lock:
            for droplet in self.droplets.values():
                if droplet["status"] == "new":
                    droplet["status"] = "active"

    def names(self, tag: str | None = None) -> set[str]:
        with self.lock:
            return {d["name"] for d in self.droplets.values() if tag is None or tag in d["tags"]}

    def inject(self, status: int, method: str = "*", retry_after: str = "0", times: int = 1) -> None:
        """Answer the next ``times`` requests (of ``method``) with ``status`` (429 or 5xx)."""
        with self.lock:
            self.faults.extend([(method, status, retry_after)] * times)

    # --- behaviour -----------------------------------------------------------------------------------------
    def _fault_for(self, method: str) -> tuple[int, str] | None:
        for i, (wanted, status, retry_after) in enumerate(self.faults):
            if wanted in ("*", method):
                del self.faults[i]
                return status, retry_after
        return None

    def list_droplets(self, base: str, query: dict[str, str]) -> tuple[int, dict[str, Any]]:
        try:
            page = int(query.get("page", "1"))
            per_page = min(int(query.get("per_page", "20")), 200)
        except ValueError:
            return 400, _error("bad_request", "page and per_page must be integers")
        if page < 1 or per_page < 1:
            return 400, _error("bad_request", "page and per_page must be positive")
        tag = query.get("tag_name")
        chosen = [d for _, d in sorted(self.droplets.items()) if tag is None or tag in d["tags"]]
        last = max(1, -(-len(chosen) // per_page))
        body: dict[str, Any] = {
            "droplets": chosen[(page - 1) * per_page : page * per_page],
            "links": {},
            "meta": {"total": len(chosen)},
        }
        if len(chosen) > per_page or "per_page" in query:
            extra = f"&tag_name={tag}" if tag else ""
            pages: dict[str, str] = {}
            if page < last:
                pages["next"] = f"{base}/droplets?page={page + 1}&per_page={per_page}{extra}"
                pages["last"] = f"{base}/droplets?page={last}&per_page={per_page}{extra}"
            if page > 1:
                pages["first"] = f"{base}/droplets?page=1&per_page={per_page}{extra}"
                pages["prev"] = f"{base}/droplets?page={page - 1}&per_page={per_page}{extra}"
            body["links"] = {"pages": pages}
        return 200, body

    def create_droplets(self, base: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        names = body.get("names") or ([body["name"]] if body.get("name") else [])
        missing = [key for key in REQUIRED if not body.get(key)]
        if not names or missing:
            return 422, _error("unprocessable_entity", f"missing: {', '.join(missing or ['name'])}")
        if len(names) > 10:
            return 422, _error("unprocessable_entity", "at most 10 droplets per request")
        created = []
        for name in names:
            droplet_id = next(self._ids)
            droplet = {
                "id": droplet_id,
                "name": name,
                "status": "new",
                "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "memory": 4096,
                "vcpus": 2,
                "disk": 80,
                "locked": False,
                "size_slug": body["size"],
                "region": {"slug": body["region"], "name": body["region"]},
                "image": {"slug": body["image"]},
                "tags": list(body.get("tags", [])),
                "vpc_uuid": body.get("vpc_uuid", ""),
                "networks": {"v4": [], "v6": []},
                "features": ["monitoring"] if body.get("monitoring") else [],
            }
            self.droplets[droplet_id] = droplet
            self.user_data[droplet_id] = body.get("user_data", "")
            self.tags.update(droplet["tags"])
            created.append(droplet)
        actions = [
            {"id": 900 + d["id"], "rel": "create", "href": f"{base}/actions/{900 + d['id']}"} for d in created
        ]
        key, value = ("droplet", created[0]) if "name" in body else ("droplets", created)
        return 202, {key: value, "links": {"actions": actions}}

    def delete_droplet(self, droplet_id: str) -> tuple[int, dict[str, Any] | None]:
        if not droplet_id.isdigit() or int(droplet_id) not in self.droplets:
            return 404, _error("not_found", "The resource you were accessing could not be found.")
        del self.droplets[int(droplet_id)]
        return 204, None

    def delete_by_tag(self, tag: str) -> tuple[int, dict[str, Any] | None]:
        if tag not in self.tags:
            return 404, _error("not_found", "The resource you were accessing could not be found.")
        for droplet_id in [i for i, d in self.droplets.items() if tag in d["tags"]]:
            del self.droplets[droplet_id]
        return 204, None

    def create_tag(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        name = str(body.get("name", ""))
        if not name or len(name) > 255:
            return 400, _error("bad_request", "tag name must be 1-255 characters")
        self.tags.add(name)
        count = sum(name in d["tags"] for d in self.droplets.values())
        return 201, {"tag": {"name": name, "resources": {"count": count, "droplets": {"count": count}}}}

    def tag_resources(self, tag: str, body: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
        if tag not in self.tags:
            return 404, _error("not_found", "The resource you were accessing could not be found.")
        for resource in body.get("resources", []):
            droplet = self.droplets.get(int(resource.get("resource_id", "0") or 0))
            if resource.get("resource_type") != "droplet" or droplet is None:
                return 404, _error("not_found", f"resource {resource} not found")
            if tag not in droplet["tags"]:
                droplet["tags"].append(tag)
        return 204, None


def _error(error_id: str, message: str) -> dict[str, str]:
    return {"id": error_id, "message": message, "request_id": "fake-" + str(time.monotonic_ns())}


class _Handler(BaseHTTPRequestHandler):
    state: FakeDigitalOcean
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _handle(self, method: str) -> None:
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        record = Recorded(method, parts.path, query, body, self.headers.get("Authorization", ""))
        base = f"http://127.0.0.1:{self.server.server_address[1]}/v2"
        fake = self.state
        with fake.lock:
            fake.requests.append(record)
            status, answer, headers = self._route(fake, method, parts.path, query, body, raw, base)
            record.status = status
        self._send(status, answer, headers)

    def _route(
        self,
        fake: FakeDigitalOcean,
        method: str,
        path: str,
        query: dict[str, str],
        body: Any,
        raw: bytes,
        base: str,
    ) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
        if self.headers.get("Authorization") != f"Bearer {fake.token}":
            return 401, _error("Unauthorized", "Unable to authenticate you"), {}
        fault = fake._fault_for(method)
        if fault is not None:
            status, retry_after = fault
            if status == 429:
                headers = {"Retry-After": retry_after, "RateLimit-Remaining": "0"}
                return 429, _error("too_many_requests", "API Rate limit exceeded."), headers
            return status, _error("server_error", "Unexpected server-side error"), {}
        if method in ("POST",) and raw and body is None:
            return 400, _error("bad_request", "request body is not JSON"), {}
        segments = path.strip("/").split("/")
        if segments[:1] != ["v2"]:
            return 404, _error("not_found", "no such endpoint"), {}
        route = segments[1:]
        if route == ["droplets"] and method == "GET":
            return (*fake.list_droplets(base, query), {})
        if route == ["droplets"] and method == "POST":
            return (*fake.create_droplets(base, body or {}), {})
        if route == ["droplets"] and method == "DELETE" and "tag_name" in query:
            return (*fake.delete_by_tag(query["tag_name"]), {})
        if len(route) == 2 and route[0] == "droplets" and method == "DELETE":
            return (*fake.delete_droplet(route[1]), {})
        if route == ["tags"] and method == "POST":
            return (*fake.create_tag(body or {}), {})
        if len(route) == 3 and route[0] == "tags" and route[2] == "resources" and method == "POST":
            return (*fake.tag_resources(route[1], body or {}), {})
        return 404, _error("not_found", f"{method} {path} is not part of this fake"), {}

    def _send(self, status: int, answer: dict[str, Any] | None, headers: dict[str, str]) -> None:
        data = json.dumps(answer).encode() if answer is not None else b""
        self.send_response(status)
        limits = {
            "RateLimit-Limit": "5000",
            "RateLimit-Remaining": "4999",
            "RateLimit-Reset": str(int(time.time())),
        }
        for key, value in {**limits, **headers}.items():
            self.send_header(key, value)
        if data:
            self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")
