"""A private Distribution registry per test: Debian's ``docker-registry`` binary on a free loopback port,
its own storage folder, manifest deletes enabled, an access log to count requests. Stopping it, making it
read-only or tampering with its storage never disturbs the registry other tests (or the developer) use."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from dockertest_support import REPO

START_TIMEOUT_S = 30.0


def registry_binary() -> str:
    """The Distribution binary, installed by ``scripts/ensure_registry.sh --install`` when missing."""
    found = shutil.which("docker-registry")
    if found:
        return found
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "ensure_registry.sh"), "--install"],
        capture_output=True,
        text=True,
        check=False,
    )
    found = shutil.which("docker-registry")
    if not found:
        raise RuntimeError(f"scripts/ensure_registry.sh --install did not install it:\n{done.stderr[-2000:]}")
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PrivateRegistry:
    """One registry process (see the module docstring)."""

    def __init__(self, root: Path, *, htpasswd: Path | None = None) -> None:
        self.root = root
        self.storage = root / "data"
        self.storage.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.htpasswd = htpasswd
        self.log_path = root / "registry.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """``127.0.0.1:<port>``: the value of ``AGENT_REGISTRY``."""
        return f"127.0.0.1:{self.port}"

    def _config(self, readonly: bool) -> Path:
        auth = (
            f"auth:\n  htpasswd:\n    realm: arena-tests\n    path: {self.htpasswd}\n"
            if self.htpasswd
            else ""
        )
        path = self.root / "config.yml"
        path.write_text(
            "version: 0.1\n"
            "log:\n  level: warn\n"
            "storage:\n"
            f"  filesystem:\n    rootdirectory: {self.storage}\n"
            "  delete:\n    enabled: true\n"
            f"  maintenance:\n    readonly:\n      enabled: {'true' if readonly else 'false'}\n"
            f"http:\n  addr: {self.address}\n" + auth
        )
        return path

    def start(self, *, readonly: bool = False) -> PrivateRegistry:
        config = self._config(readonly)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [registry_binary(), "serve", str(config)], stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while self.status("/v2/") not in (200, 401):
            if self.process.poll() is not None:
                raise RuntimeError(f"the registry exited: {self.log_path.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the registry did not answer within {START_TIMEOUT_S:g} s")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None

    def restart(self, *, readonly: bool = False) -> None:
        self.stop()
        self.start(readonly=readonly)

    def request(self, method: str, path: str, *, accept: str = "") -> tuple[int, dict[str, str]]:
        """(HTTP status, headers) of one request to the registry; status 0 when nothing answers."""
        request = urllib.request.Request(f"http://{self.address}{path}", method=method)
        if accept:
            request.add_header("Accept", accept)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=5) as response:
                return response.status, dict(response.headers)
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers)
        except OSError:
            return 0, {}

    def status(self, path: str) -> int:
        return self.request("GET", path)[0]

    def manifest(self, repository: str, digest: str) -> tuple[int, dict[str, str]]:
        """``HEAD`` of a manifest by digest (schema 2)."""
        return self.request(
            "HEAD",
            f"/v2/{repository}/manifests/{digest}",
            accept="application/vnd.docker.distribution.manifest.v2+json",
        )

    def delete_manifest(self, repository: str, digest: str) -> int:
        return self.request("DELETE", f"/v2/{repository}/manifests/{digest}")[0]

    def tamper_manifest(self, digest: str) -> None:
        """Rewrite the stored manifest of ``digest`` with the same meaning but other bytes (compact JSON;
        Docker writes it indented): the registry keeps serving it under ``digest``, which it no longer
        hashes to."""
        hexdigest = digest.split(":", 1)[1]
        blob = self.storage / "docker/registry/v2/blobs/sha256" / hexdigest[:2] / hexdigest / "data"
        original = blob.read_text()
        tampered = json.dumps(json.loads(original), separators=(",", ":"))
        assert tampered != original
        blob.write_text(tampered)

    def manifest_gets(self, digest: str) -> int:
        """How many times the access log shows ``GET .../manifests/<digest>``."""
        needle = '"GET /v2/'
        return sum(
            1
            for line in self.log_path.read_text(errors="replace").splitlines()
            if needle in line and f"/manifests/{digest} " in line
        )
