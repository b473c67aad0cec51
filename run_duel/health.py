"""Can this worker run agents right now? ``sandbox_problem`` answers in well under a second.

The job runner asks before it takes a duel, a smoke test or a live game: a worker whose Docker engine or
agent registry does not answer must not take work (a duel it cannot start would burn an attempt), and
takes work again once they answer. Every check is read-only: a ping, ``GET /v2/``, a file lookup.

* ``docker``: the engine (``DOCKER_HOST``, else the local socket) answers ``GET /_ping`` (asked with the
  standard library: importing the Docker SDK alone can take longer than the whole check), and, when
  ``AGENT_REGISTRY`` is set, the registry answers ``GET /v2/`` (200, or 401: it answers and wants
  credentials). Both are asked at once, each bounded by ``TIMEOUT_S``.
* ``local``: the Python interpreter agents run with exists and is executable, and bubblewrap is installed
  and executable, unless ``SANDBOX_ALLOW_UNISOLATED=1`` lets agents run as plain subprocesses (without it
  the local sandbox refuses to start: a worker that would fail every job as ours stops taking them).
"""

from __future__ import annotations

import http.client
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

#: Bound of each check; the checks run in parallel, so this is also (about) the worst case of a call.
TIMEOUT_S = 0.6


def sandbox_problem(sandbox: str) -> str | None:
    """``None`` when ``sandbox`` ("docker" or "local") can run agents now, else a one-line reason."""
    if sandbox == "docker":
        return _first_problem([_docker_problem, _registry_problem])
    if sandbox == "local":
        return _local_problem()
    return f"unknown sandbox {sandbox!r} (expected docker or local)"


def _first_problem(checks: list[Callable[[], str | None]]) -> str | None:
    """Run ``checks`` in parallel threads; the first problem in list order, or ``None``. A check that
    has not returned after ``TIMEOUT_S`` (plus a margin) is a problem itself (e.g. a hung DNS lookup)."""
    results: list[str | None] = [None] * len(checks)
    done = [False] * len(checks)

    def run(index: int) -> None:
        try:
            results[index] = checks[index]()
        except Exception as exc:  # a probe must answer, whatever breaks
            results[index] = f"{checks[index].__name__.strip('_').replace('_', ' ')} failed: {exc}"
        done[index] = True

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(checks))]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + TIMEOUT_S + 0.2  # one bound for all: the checks run side by side
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    for index, check in enumerate(checks):
        if not done[index]:
            return f"{check.__name__.strip('_').replace('_', ' ')}: no answer within {TIMEOUT_S + 0.2:g} s"
        if results[index]:
            return _one_line(results[index] or "")
    return None


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 300 else line[:297] + "..."


class _UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over the engine's Unix socket (the standard library only: no SDK import on the first call)."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


def _docker_problem() -> str | None:
    """The engine (``DOCKER_HOST``, else the local socket) answers ``GET /_ping`` within ``TIMEOUT_S``."""
    host = os.environ.get("DOCKER_HOST", "").strip() or "unix:///var/run/docker.sock"
    tls = os.environ.get("DOCKER_TLS_VERIFY", "").strip() not in ("", "0")
    url = urlsplit(host)
    if url.scheme == "unix":
        connection: http.client.HTTPConnection = _UnixHTTPConnection(url.path, TIMEOUT_S)
    elif url.scheme == "tcp" and not tls:
        connection = http.client.HTTPConnection(url.hostname or "", url.port or 2375, timeout=TIMEOUT_S)
    else:  # TLS, ssh://...: the SDK knows how
        return _docker_problem_via_sdk(host)
    try:
        connection.request("GET", "/_ping")
        status = connection.getresponse().status
    except (OSError, http.client.HTTPException) as exc:
        return f"the Docker engine ({host}) does not answer: {exc}"
    finally:
        connection.close()
    if status != 200:
        return f"the Docker engine ({host}) answers its ping with HTTP {status}"
    return None


def _docker_problem_via_sdk(host: str) -> str | None:
    import docker
    from docker.utils import kwargs_from_env

    try:
        api = docker.APIClient(version="1.41", timeout=TIMEOUT_S, **kwargs_from_env())
        try:
            response = api.get(f"{api.base_url}/_ping", timeout=TIMEOUT_S)
        finally:
            api.close()
    except Exception as exc:  # requests, urllib3 and the SDK raise many kinds
        return f"the Docker engine ({host}) does not answer: {exc}"
    if response.status_code != 200:
        return f"the Docker engine ({host}) answers its ping with HTTP {response.status_code}"
    return None


def _registry_problem() -> str | None:
    """When ``AGENT_REGISTRY`` is set, it answers ``GET /v2/``."""
    from run_duel.registry import RegistryConfig, RegistryConfigError

    try:
        config = RegistryConfig.from_env()
    except RegistryConfigError as exc:
        return str(exc)
    return None if config is None else config.ping(timeout=TIMEOUT_S)


def _local_problem() -> str | None:
    """The interpreter agents run with is there, and bubblewrap too unless running unisolated is allowed."""
    from run_duel.sandbox.local_bwrap import ALLOW_UNISOLATED_ENV, bwrap_path, unisolated_allowed

    python = sys.executable
    if not python or not os.access(python, os.X_OK):
        return f"the Python interpreter {python!r} that runs agents is missing or not executable"
    if unisolated_allowed():
        return None
    bwrap = bwrap_path()
    if not bwrap or not os.access(bwrap, os.X_OK):
        return (
            "bubblewrap (bwrap) is not installed or not executable, and the local sandbox refuses to run "
            f"agents without it ({ALLOW_UNISOLATED_ENV} is not set)"
        )
    return None
