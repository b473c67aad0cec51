"""Worker droplets on DigitalOcean, through its HTTP API v2 (urllib; no SDK).

Droplets are created one by one from the same image and cloud-init as terraform's workers, tagged
``spec.tag``. The cloud-init is a template: ``__WORKER_NAME__`` becomes the droplet's name and
``__JOIN_TICKET__`` a one-time join ticket minted for it (``autoscaler.join``), so no droplet's user-data
holds a password. The droplet's Celery worker is named ``worker@<droplet name>`` and claims jobs as
``<droplet name>:<pid>``, which is how a droplet is seen busy. Draining adds the tag ``<tag>-draining`` and,
when a ``drain_hook`` is given, asks the Celery worker to stop consuming; a draining droplet is destroyed
once no job runs on it, and ``on_destroy`` then revokes what it was given (its database role).

The API as DigitalOcean documents it: ``Authorization: Bearer <token>``; lists paginated with ``page`` /
``per_page`` (at most 200) and ``links.pages.next``; errors as JSON ``{"id", "message"}``; 429 when
rate-limited (``Retry-After`` seconds, or ``RateLimit-Reset`` epoch seconds), retried after that wait up to
``max_wait_s``; 5xx and connection failures retried with a doubling backoff, ``retries`` times.

``dry_run=True`` sends no request that changes anything: every call is printed instead (the token and
user-data never are); listing then needs a token, and without one the pool is seen as empty.
"""

from __future__ import annotations

import json
import logging
import secrets
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TextIO

from autoscaler.join import make_ticket
from autoscaler.policy import WorkerState, WorkerView

API = "https://api.digitalocean.com/v2"
NAME_PLACEHOLDER = "__WORKER_NAME__"
TICKET_PLACEHOLDER = "__JOIN_TICKET__"
log = logging.getLogger("autoscaler.digitalocean")


class DigitalOceanError(RuntimeError):
    """The API refused a call, or kept failing (status, DigitalOcean's error id and message included)."""

    def __init__(self, message: str, status: int = 0, error_id: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.error_id = error_id


@dataclass
class DropletSpec:
    """What every autoscaled droplet is created with."""

    region: str
    size: str
    image: str
    tag: str
    user_data: str
    vpc_uuid: str = ""
    ssh_keys: list[str] = field(default_factory=list)
    name_prefix: str = "rl-arena-worker-auto"


def create_droplet_body(spec: DropletSpec, name: str, user_data: str) -> dict[str, Any]:
    """The JSON body of ``POST /v2/droplets`` creating droplet ``name``."""
    body: dict[str, Any] = {
        "name": name,
        "region": spec.region,
        "size": spec.size,
        "image": spec.image,
        "tags": [spec.tag],
        "user_data": user_data,
        "monitoring": True,
        "ipv6": False,
    }
    if spec.vpc_uuid:
        body["vpc_uuid"] = spec.vpc_uuid
    if spec.ssh_keys:
        body["ssh_keys"] = spec.ssh_keys
    return body


def _retry_after(headers: Any, now: float) -> float:
    """Seconds DigitalOcean asks us to wait after a 429 (Retry-After, else RateLimit-Reset)."""
    for name, relative in (("Retry-After", True), ("RateLimit-Reset", False)):
        raw = (headers.get(name) or "").strip()
        try:
            value = float(raw)
        except ValueError:
            continue
        return max(0.0, value if relative else value - now)
    return 1.0


class DigitalOceanProvider:
    """Autoscaled worker droplets, identified by tag."""

    def __init__(
        self,
        spec: DropletSpec,
        token: str = "",
        *,
        join_key: str = "",
        dry_run: bool = False,
        api: str = API,
        out: TextIO | None = None,
        drain_hook: Callable[[str], None] | None = None,
        on_destroy: Callable[[str], None] | None = None,
        timeout_s: float = 30.0,
        per_page: int = 200,
        retries: int = 4,
        max_wait_s: float = 120.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not token and not dry_run:
            raise ValueError("a DigitalOcean token is required unless dry_run")
        if TICKET_PLACEHOLDER in spec.user_data and not join_key and not dry_run:
            raise ValueError(f"the workers' cloud-init asks for {TICKET_PLACEHOLDER} but no join key is set")
        if not 1 <= per_page <= 200:
            raise ValueError("per_page must be within 1..200 (DigitalOcean's maximum is 200)")
        self.spec = spec
        self.token = token
        self.join_key = join_key
        self.dry_run = dry_run
        self.api = api.rstrip("/")
        if not self.api.startswith(("https://", "http://")):
            raise ValueError(f"the API address must be http(s): {api!r}")
        self.out = out or sys.stdout
        self.drain_hook = drain_hook
        self.on_destroy = on_destroy
        self.timeout_s = timeout_s
        self.per_page = per_page
        self.retries = retries
        self.max_wait_s = max_wait_s
        self.sleep = sleep
        self._ids: dict[str, int] = {}

    @property
    def draining_tag(self) -> str:
        """Tag marking droplets being drained."""
        return f"{self.spec.tag}-draining"

    # --- HTTP --------------------------------------------------------------------------------------------
    def _call(
        self, method: str, path: str, body: dict[str, Any] | None = None, query: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        url = f"{self.api}{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        if self.dry_run and method != "GET":
            shown = dict(body or {})
            if "user_data" in shown:
                shown["user_data"] = f"<{len(shown['user_data'])} bytes of cloud-init>"
            print(f"DRY-RUN {method} {url} {json.dumps(shown, sort_keys=True)}", file=self.out)
            return {}
        data = json.dumps(body).encode() if body is not None else None
        backoff = 1.0
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - scheme checked
            request.add_header("Authorization", f"Bearer {self.token}")
            request.add_header("Content-Type", "application/json")
            request.add_header("Accept", "application/json")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310
                    raw = response.read()
                return json.loads(raw) if raw else {}
            except urllib.error.HTTPError as exc:
                error = self._error(method, path, exc)
                last_try = attempt == self.retries
                if exc.code == 429 and not last_try:
                    wait = _retry_after(exc.headers, time.time())
                    if wait > self.max_wait_s:
                        raise DigitalOceanError(
                            f"{error}; rate limited for {wait:.0f}s (> {self.max_wait_s:.0f}s)",
                            429,
                            error.error_id,
                        ) from exc
                    log.warning("%s; retrying in %.1fs", error, wait)
                    self.sleep(wait)
                    continue
                if exc.code >= 500 and not last_try:
                    log.warning("%s; retrying in %.1fs", error, backoff)
                    self.sleep(backoff)
                    backoff *= 2
                    continue
                raise error from exc
            except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                if attempt == self.retries:
                    raise DigitalOceanError(f"{method} {path}: API unreachable: {exc}") from exc
                log.warning("%s %s: API unreachable (%s); retrying in %.1fs", method, path, exc, backoff)
                self.sleep(backoff)
                backoff *= 2
        raise AssertionError("unreachable")

    @staticmethod
    def _error(method: str, path: str, exc: urllib.error.HTTPError) -> DigitalOceanError:
        raw = exc.read().decode(errors="replace")[:500]
        try:
            payload = json.loads(raw)
            error_id, message = str(payload.get("id", "")), str(payload.get("message", raw))
        except (ValueError, AttributeError):
            error_id, message = "", raw
        return DigitalOceanError(
            f"{method} {path}: HTTP {exc.code} {error_id}: {message}", exc.code, error_id
        )

    def droplets(self, tag: str) -> list[dict[str, Any]]:
        """Every droplet carrying ``tag``, following the pages."""
        found: list[dict[str, Any]] = []
        page = 1
        while True:
            answer = self._call(
                "GET", "/droplets", query={"tag_name": tag, "page": page, "per_page": self.per_page}
            )
            found.extend(answer.get("droplets", []))
            if not answer.get("links", {}).get("pages", {}).get("next"):
                return found
            page += 1
            if page > 1000:
                raise DigitalOceanError("GET /droplets: more than 1000 pages; refusing to go on")

    # --- Provider ----------------------------------------------------------------------------------------
    def list_workers(self, busy_claimers: frozenset[str] = frozenset()) -> list[WorkerView]:
        """Droplets tagged ``spec.tag``; busy when a running job's claimer host is the droplet's name."""
        if self.dry_run and not self.token:
            print(
                f"DRY-RUN GET {self.api}/droplets?tag_name={self.spec.tag} (no token: pool seen as empty)",
                file=self.out,
            )
            return []
        busy_hosts = {claimer.rpartition(":")[0] for claimer in busy_claimers}
        now = time.time()
        views = []
        for droplet in self.droplets(self.spec.tag):
            name = droplet["name"]
            self._ids[name] = droplet["id"]
            created = datetime.fromisoformat(droplet["created_at"].replace("Z", "+00:00")).timestamp()
            state: WorkerState
            if self.draining_tag in droplet.get("tags", []):
                state = "draining"
            elif droplet.get("status") == "new":
                state = "starting"
            else:
                state = "running"
            views.append(WorkerView(name=name, state=state, busy=name in busy_hosts, age_s=now - created))
        return views

    def user_data_for(self, name: str) -> str:
        """The cloud-init of droplet ``name``: its name and a join ticket of its own filled in."""
        text = self.spec.user_data.replace(NAME_PLACEHOLDER, name)
        if TICKET_PLACEHOLDER in text:
            ticket = make_ticket(self.join_key, name) if self.join_key else "<join ticket>"
            text = text.replace(TICKET_PLACEHOLDER, ticket)
        return text

    def start(self, count: int) -> list[str]:
        """Create ``count`` droplets named ``<prefix>-<yymmddHHMMSS>-<4 hex>``, one request (and ticket) each.

        Names are unique (DigitalOcean allows duplicates; a worker's name is its Celery host, claimer host
        and database role, so two droplets must never share one).
        """
        stamp = time.strftime("%y%m%d%H%M%S", time.gmtime())
        names: list[str] = []
        for _ in range(count):
            name = f"{self.spec.name_prefix}-{stamp}-{secrets.token_hex(2)}"
            while name in self._ids or name in names:
                name = f"{self.spec.name_prefix}-{stamp}-{secrets.token_hex(2)}"
            self._call("POST", "/droplets", create_droplet_body(self.spec, name, self.user_data_for(name)))
            names.append(name)
        return names

    def drain(self, name: str) -> None:
        """Tag the droplet as draining, and ask its Celery worker to stop consuming (``drain_hook``)."""
        self._call("POST", "/tags", {"name": self.draining_tag})
        droplet_id = self._ids.get(name, name)
        self._call(
            "POST",
            f"/tags/{self.draining_tag}/resources",
            {"resources": [{"resource_id": str(droplet_id), "resource_type": "droplet"}]},
        )
        if self.drain_hook is not None:
            self.drain_hook(name)

    def destroy(self, name: str) -> None:
        """Delete the droplet (already gone is fine), then revoke what it was given (``on_destroy``)."""
        droplet_id = self._ids.get(name)
        if droplet_id is None and not self.dry_run:
            raise DigitalOceanError(f"unknown droplet {name!r} (list_workers first)")
        try:
            self._call("DELETE", f"/droplets/{droplet_id if droplet_id is not None else name}")
        except DigitalOceanError as exc:
            if exc.status != 404:
                raise
        self._ids.pop(name, None)
        if self.on_destroy is not None and not self.dry_run:
            self.on_destroy(name)
