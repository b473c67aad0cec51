"""Warm Docker sandboxes: a container per revision kept between duels, a fresh agent process per duel.

A warm container runs our harness as its first process (PID 1) in ``--warm`` mode, started isolated
(``python3 -I -B -u``: nothing of the agent's packages runs in it): the *factory*. It imports numpy once
(unless the agent's packages bring their own), then for each duel forks a fresh agent process (which adds
the agent's packages, imports ``player.py`` and builds its ``Player`` exactly as a cold harness does)
and, when the duel ends, kills every other process of the container and empties every folder an agent can
write (``/tmp``, ``/dev/shm``, ``/dev/mqueue``), reporting whether anything survived. The referee side
(this module) keeps idle containers in a per-process ``WarmPool`` keyed by image and limits, and hands
each one to one seat at a time.

Safety (the argument is in ``run_duel/README.md``, "Warm sandboxes"):

* one revision per container: the pool key is the image reference (a digest on the platform), the
  limits and the revision id (``LaunchSpec.labels["revision"]``, set by the platform's tasks);
* opponents never share a container: a leased container serves one seat until ``kill`` gives it back,
  so self-play takes two containers;
* nothing of a duel survives it: the factory's clean-up kills every process but itself
  (``kill(-1)`` in the container's PID namespace, repeated until none is left) and empties the writable
  folders; a container is only reused when the clean-up says it is clean, the referee ended the seat
  with ``close`` (not a kill after a fault), and no OOM kill happened;
* a container is retired after ``ReusePolicy.max_duels`` duels or ``max_age_s`` seconds, and whenever
  the factory does not answer, answers something unexpected, or the container ended.

Control protocol: a SOCK_SEQPACKET Unix socket (one JSON object per packet) in the container's
bind-mounted launch folder; ``spawn`` carries the duel's channel (one end of a socketpair) and the write
end of its stderr pipe as ``SCM_RIGHTS`` descriptors. The factory's listener path is unlinked as soon as
it connected, so no agent can reach it, and it was bound through a descriptor of its folder, so the
container's ``/proc/net/unix`` never names the referee's folder.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from run_duel.channel import Channel
from run_duel.sandbox.base import ExitInfo, LaunchSpec, Limits, SandboxError

if TYPE_CHECKING:
    from collections.abc import Callable

log = logging.getLogger(__name__)

#: How long a control request may take (a clean-up kills and waits for every agent process).
CONTROL_TIMEOUT_S = 10.0


#: What a warm container is made for: the image, the limits and the revision (``LaunchSpec.labels``).
WarmKey = tuple[str, Limits, str]


def warm_key(spec: LaunchSpec) -> WarmKey:
    """The pool key of a launch: a container only ever hosts one revision (two revisions with the same
    image content still get a container each) under one set of limits."""
    return (spec.agent, spec.limits, str(spec.labels.get("revision", "")))


class WarmError(SandboxError):
    """A warm container's factory did not answer as expected: the container is retired."""


@dataclass(frozen=True)
class ReusePolicy:
    """When containers are reused (``enabled``) and when a warm container is retired."""

    enabled: bool = False
    max_duels: int = 200  # seats served by one container
    max_age_s: float = 600.0  # seconds since the container started
    max_idle: int = 8  # idle warm containers kept by one process (the least recently used go first)


def warm_capable(entrypoint: list[str] | None) -> str | None:
    """The agent folder of an image whose entrypoint is our Python harness (the factory needs Python
    and numpy), else ``None`` (such images are always started cold)."""
    if not entrypoint or not entrypoint[0].startswith("python") or "--agent-dir" not in entrypoint:
        return None
    if not any(part.endswith("/arena_harness.py") for part in entrypoint):
        return None
    index = entrypoint.index("--agent-dir")
    return entrypoint[index + 1] if index + 1 < len(entrypoint) else None


class WarmContainer:
    """One warm container and the control socket to its factory."""

    def __init__(self, container_id: str, control: socket.socket, socket_dir: str, key: WarmKey):
        self.container_id = container_id
        self.control = control
        self.socket_dir = socket_dir
        self.key = key
        self.started = time.monotonic()
        self.duels = 0
        self.broken = False
        self.factory_pid = 0  # as this process sees it (0: another pid namespace)
        self._lock = threading.Lock()

    def request(
        self, message: dict[str, Any], fds: list[int] | None = None, timeout: float = CONTROL_TIMEOUT_S
    ):
        """Send one request and return the factory's reply; ``WarmError`` (and the container marked
        broken) on any failure."""
        data = json.dumps(message).encode()
        with self._lock:
            if self.broken:
                raise WarmError(f"warm container {self.container_id[:12]} is retired")
            try:
                self.control.settimeout(timeout)
                if fds:
                    socket.send_fds(self.control, [data], fds)
                else:
                    self.control.sendall(data)
                raw = self.control.recv(65536)
            except OSError as exc:
                self.broken = True
                raise WarmError(f"the factory of {self.container_id[:12]} did not answer: {exc}") from exc
            if not raw:
                self.broken = True
                raise WarmError(f"the factory of {self.container_id[:12]} is gone")
            try:
                reply = json.loads(raw)
            except ValueError as exc:
                self.broken = True
                raise WarmError(f"the factory of {self.container_id[:12]} sent {raw[:200]!r}") from exc
            if reply.get("type") == "failed":
                self.broken = True
                raise WarmError(f"the factory of {self.container_id[:12]} failed: {reply.get('message')}")
            return reply

    def expired(self, policy: ReusePolicy) -> bool:
        return self.duels >= policy.max_duels or time.monotonic() - self.started >= policy.max_age_s


class WarmPool:
    """Idle warm containers of one process, by (image, limits); each one leased to one seat at a time."""

    def __init__(self, policy: ReusePolicy, root: str, remove: Callable[[str], Any]) -> None:
        self.policy = policy
        self.root = root
        self._remove = remove
        self._idle: list[WarmContainer] = []  # least recently used first
        self._lock = threading.Lock()
        self.created = 0
        self.retired = 0

    def take(self, key: WarmKey) -> WarmContainer | None:
        """An idle container for ``key`` (the most recently used), or ``None``."""
        expired = []
        found = None
        with self._lock:
            for container in list(self._idle):
                if container.expired(self.policy):
                    self._idle.remove(container)
                    expired.append(container)
            for container in reversed(self._idle):
                if container.key == key:
                    self._idle.remove(container)
                    found = container
                    break
        for container in expired:
            self.retire(container)
        return found

    def give_back(self, container: WarmContainer, reusable: bool) -> None:
        """After a seat: keep the container for the next duel if it is clean and young, else retire it."""
        container.duels += 1
        if not (
            reusable and self.policy.enabled and not container.broken and not container.expired(self.policy)
        ):
            self.retire(container)
            return
        with self._lock:
            self._idle.append(container)
            evicted = self._idle[: max(0, len(self._idle) - self.policy.max_idle)]
            del self._idle[: len(evicted)]
        for old in evicted:
            self.retire(old)

    def retire(self, container: WarmContainer) -> None:
        """Close the control socket (the factory exits), remove the container in the background."""
        container.broken = True
        self.retired += 1
        with contextlib.suppress(OSError):
            container.control.close()
        self._remove(container.container_id)
        shutil.rmtree(container.socket_dir, ignore_errors=True)

    def can_serve(self, keys: list[WarmKey]) -> bool:
        """Whether an idle container is there for each of ``keys`` (a key twice needs two)."""
        with self._lock:
            available = [container.key for container in self._idle]
        for key in keys:
            if key not in available:
                return False
            available.remove(key)
        return True

    def holds_image(self, image: str) -> bool:
        """Whether an idle container of ``image`` exists (then the engine has the image: in use, it is
        never trimmed from the cache)."""
        with self._lock:
            return any(container.key[0] == image for container in self._idle)

    def idle(self) -> list[WarmContainer]:
        with self._lock:
            return list(self._idle)

    def close(self) -> None:
        """Retire every idle container (leased ones are retired when given back)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for container in idle:
            self.retire(container)


class WarmChannel(Channel):
    """The duel's channel; remembers whether the referee ended the seat with ``close``."""

    close_sent = False

    def send(
        self, message: dict[str, Any], timeout: float, before_wait: Callable[[], object] | None = None
    ) -> None:
        if message.get("type") == "close":
            self.close_sent = True
        super().send(message, timeout, before_wait)


def new_pool_root(base: Path, prefix: str) -> str:
    """The per-process folder holding the warm containers' launch folders (removed by the reaper once
    the process is gone: the name starts with ``<prefix><pid>-``)."""
    return tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-warm-", dir=base)


def exit_info(reply: dict[str, Any]) -> ExitInfo | None:
    """ExitInfo from a factory's ``exit``/``reaped`` reply; ``None`` while the agent runs."""
    if reply.get("status") is None:
        return None
    return ExitInfo(returncode=int(reply["status"]), oom_killed=bool(reply.get("oom")))
