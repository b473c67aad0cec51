"""Talking to the Docker engine about agent containers: its failures (``EngineError``), a container's exit
(``exit_info``), removal that outlasts an engine restart (``remove_container``, the background
``Remover``), and engine calls made side by side (``each_concurrently``).

Engine failures are infrastructure, never a player's fault.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from docker.errors import DockerException, NotFound
from requests.exceptions import RequestException

from run_duel.sandbox.base import ExitInfo, SandboxError
from run_duel.sandbox.docker_client import get_client

log = logging.getLogger(__name__)

#: How long a removal keeps retrying while the engine does not answer (e.g. it is restarting).
ENGINE_PATIENCE_S = 60.0
#: What a call to the engine raises when the engine fails (requests' errors are ``OSError``s).
ENGINE_FAILURES = (DockerException, RequestException, OSError)


class EngineError(SandboxError):
    """The Docker engine failed (did not answer, lost or killed a container): infrastructure."""


def exit_info(state: dict[str, Any]) -> ExitInfo | None:
    """ExitInfo from a container's ``State``; ``None`` while it runs."""
    status = state.get("Status")
    if state.get("Running") or status in ("created", "running", "restarting", "paused"):
        return None
    code = state.get("ExitCode")
    detail = state.get("Error") or ""
    # The init process exits 128+N when the harness was killed by signal N: report it as -N (POSIX style).
    returncode = -(code - 128) if isinstance(code, int) and 128 < code < 160 else code
    return ExitInfo(returncode=returncode, oom_killed=bool(state.get("OOMKilled")), detail=detail)


def remove_container(container_id: str, *, patience: float = 1.0) -> bool:
    """Force-remove a container by id, retrying for ``patience`` seconds while the engine fails (it may
    be restarting). Logs (never raises) if it cannot; returns whether the container is gone."""
    deadline = time.monotonic() + patience
    delay = 0.05
    while True:
        try:
            get_client().api.remove_container(container_id, force=True, v=True)
            return True
        except NotFound:
            return True
        except ENGINE_FAILURES as exc:
            if "removal of container" in str(exc) and "already in progress" in str(exc):
                return True
            if time.monotonic() >= deadline:
                log.error("could not remove container %s: %s", container_id[:12], exc)
                return False
        time.sleep(delay)
        delay = min(delay * 2, 1.0)


class Remover:
    """Background removal of agent containers, tracked so that ``join`` can wait for all of them."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="docker-remove")
        self._pending: set[Future[Any]] = set()
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], Any]) -> Future[Any]:
        """Run ``job`` (a teardown) in the background."""
        try:
            future = self._pool.submit(job)
        except RuntimeError:  # the interpreter is shutting down (atexit): no new threads, do it now
            future = Future()
            try:
                future.set_result(job())
            except Exception as exc:
                future.set_exception(exc)
            return future
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)
        return future

    def remove(self, container_id: str) -> Future[Any]:
        """Remove one container by id in the background."""
        return self.submit(functools.partial(remove_container, container_id, patience=ENGINE_PATIENCE_S))

    def _done(self, future: Future[Any]) -> None:
        with self._lock:
            self._pending.discard(future)

    def join(self) -> None:
        """Wait until every submitted removal finished (each retries for at most ``ENGINE_PATIENCE_S``)."""
        with self._lock:
            pending = list(self._pending)
        wait(pending)
        for future in pending:
            if future.exception() is not None:
                log.error("removing an agent container failed: %s", future.exception())


def each_concurrently(call: Callable[[Any], Any], items: list[Any], name: str) -> list[Any]:
    """``[call(item) for item in items]``, one thread per item when there are several (each call is an
    engine round trip); the first exception is raised once every call has ended."""
    if len(items) <= 1:
        return [call(item) for item in items]
    with ThreadPoolExecutor(max_workers=len(items), thread_name_prefix=name) as pool:
        return list(pool.map(call, items))
