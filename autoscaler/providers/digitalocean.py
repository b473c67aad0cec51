"""Worker droplets on DigitalOcean, through its HTTP API (urllib; no SDK).

Droplets are created from the same image and cloud-init as terraform's workers (the cloud-init joins the
main droplet's Postgres/Redis over the VPC and starts one Celery worker named ``worker@<droplet name>``),
tagged ``tag``. Draining adds the tag ``<tag>-draining`` and, when a ``drain_hook`` is given, asks the
Celery worker to stop consuming; a draining droplet is destroyed once no job runs on it.

``dry_run=True`` sends no request that changes anything: every call is printed instead (the token is
never printed); listing then needs a token, and without one the pool is seen as empty.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TextIO

from autoscaler.policy import WorkerView

API = "https://api.digitalocean.com/v2"


class DigitalOceanError(RuntimeError):
    """The API refused a call (status and message included)."""


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


def create_droplets_body(spec: DropletSpec, names: list[str]) -> dict[str, Any]:
    """The JSON body of ``POST /v2/droplets`` for ``names`` (multi-create)."""
    body: dict[str, Any] = {
        "names": names,
        "region": spec.region,
        "size": spec.size,
        "image": spec.image,
        "tags": [spec.tag],
        "user_data": spec.user_data,
        "monitoring": True,
        "ipv6": False,
    }
    if spec.vpc_uuid:
        body["vpc_uuid"] = spec.vpc_uuid
    if spec.ssh_keys:
        body["ssh_keys"] = spec.ssh_keys
    return body


class DigitalOceanProvider:
    """Autoscaled worker droplets, identified by tag."""

    def __init__(
        self,
        spec: DropletSpec,
        token: str = "",
        *,
        dry_run: bool = False,
        api: str = API,
        out: TextIO | None = None,
        drain_hook: Callable[[str], None] | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        if not token and not dry_run:
            raise ValueError("a DigitalOcean token is required unless dry_run")
        self.spec = spec
        self.token = token
        self.dry_run = dry_run
        self.api = api.rstrip("/")
        self.out = out or sys.stdout
        self.drain_hook = drain_hook
        self.timeout_s = timeout_s
        self._ids: dict[str, int] = {}

    @property
    def draining_tag(self) -> str:
        """Tag marking droplets being drained."""
        return f"{self.spec.tag}-draining"

    # --- HTTP --------------------------------------------------------------------------------------------
    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        url = f"{self.api}{path}"
        if self.dry_run and method != "GET":
            shown = dict(body or {})
            if "user_data" in shown:
                shown["user_data"] = f"<{len(shown['user_data'])} bytes of cloud-init>"
            print(f"DRY-RUN {method} {url} {json.dumps(shown, sort_keys=True)}", file=self.out)
            return {}
        if not url.startswith(("https://", "http://")):
            raise DigitalOceanError(f"refusing a non-HTTP API address: {url!r}")
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - scheme checked above
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310 - https API
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:500]
            raise DigitalOceanError(f"{method} {path}: HTTP {exc.code}: {detail}") from exc
        return json.loads(raw) if raw else {}

    # --- Provider ----------------------------------------------------------------------------------------
    def list_workers(self, busy_claimers: frozenset[str] = frozenset()) -> list[WorkerView]:
        """Droplets tagged ``spec.tag``; busy when a running job's claimer host is the droplet's name."""
        if self.dry_run and not self.token:
            print(
                f"DRY-RUN GET {self.api}/droplets?tag_name={self.spec.tag} (no token: pool seen as empty)",
                file=self.out,
            )
            return []
        droplets = self._call("GET", f"/droplets?tag_name={self.spec.tag}&per_page=200").get("droplets", [])
        busy_hosts = {claimer.rpartition(":")[0] for claimer in busy_claimers}
        now = time.time()
        views = []
        for droplet in droplets:
            name = droplet["name"]
            self._ids[name] = droplet["id"]
            created = datetime.fromisoformat(droplet["created_at"].replace("Z", "+00:00")).timestamp()
            if self.draining_tag in droplet.get("tags", []):
                state = "draining"
            elif droplet.get("status") == "new":
                state = "starting"
            else:
                state = "running"
            views.append(WorkerView(name=name, state=state, busy=name in busy_hosts, age_s=now - created))
        return views

    def start(self, count: int) -> list[str]:
        """Create ``count`` droplets named ``<prefix>-<timestamp>-<i>``."""
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
        names = [f"{self.spec.name_prefix}-{stamp}-{i + 1}" for i in range(count)]
        if names:
            self._call("POST", "/droplets", create_droplets_body(self.spec, names))
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
        """Delete the droplet."""
        droplet_id = self._ids.get(name)
        if droplet_id is None and not self.dry_run:
            raise DigitalOceanError(f"unknown droplet {name!r} (list_workers first)")
        self._call("DELETE", f"/droplets/{droplet_id if droplet_id is not None else name}")
