"""Fault injection between real processes: a cuttable proxy in front of PostgreSQL or the Docker engine.

A worker under test is pointed at the proxy instead of the service. ``cut()`` drops every open
connection and refuses new ones (what a worker sees when PostgreSQL or the engine goes away);
``restore()`` listens again on the same address. The service itself never stops, so the test process
keeps its own direct connection to observe and assert.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest


class CuttableProxy:
    """Forward connections from a listening socket to ``target``, until ``cut()``."""

    def __init__(self, family: int, listen: str | tuple[str, int], target: str | tuple[str, int]) -> None:
        self.family = family
        self.listen_address = listen
        self.target = target
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._server: socket.socket | None = None
        self._accepting: threading.Thread | None = None
        self.restore()

    @property
    def address(self) -> str | tuple[str, int]:
        return self.listen_address

    def restore(self) -> None:
        """Listen (again) and forward new connections."""
        server = socket.socket(self.family, socket.SOCK_STREAM)
        if self.family == socket.AF_UNIX:
            Path(str(self.listen_address)).unlink(missing_ok=True)
        else:
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(self.listen_address)
        if self.family != socket.AF_UNIX:
            self.listen_address = server.getsockname()[:2]
        server.listen(64)
        self._server = server
        self._accepting = threading.Thread(target=self._accept, args=(server,), daemon=True)
        self._accepting.start()

    def cut(self) -> None:
        """Refuse new connections and reset every open one."""
        server, self._server = self._server, None
        if server is not None:
            with contextlib.suppress(OSError):
                server.shutdown(socket.SHUT_RDWR)
            server.close()
            if self.family == socket.AF_UNIX:
                Path(str(self.listen_address)).unlink(missing_ok=True)
        if self._accepting is not None:
            self._accepting.join(timeout=5)
        with self._lock:
            conns, self._conns = self._conns, set()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    close = cut

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            try:
                upstream = socket.socket(self.family, socket.SOCK_STREAM)
                upstream.connect(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._server is not server:  # cut meanwhile
                    client.close()
                    upstream.close()
                    return
                self._conns.update((client, upstream))
            self._start_pumps(client, upstream)

    def _start_pumps(self, client: socket.socket, upstream: socket.socket) -> None:
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._conns.discard(source)
                self._conns.discard(sink)


def tcp_proxy(host: str, port: int) -> CuttableProxy:
    """A proxy on 127.0.0.1 (free port) to ``host:port``."""
    return CuttableProxy(socket.AF_INET, ("127.0.0.1", 0), (host, port))


def unix_proxy(listen: Path, target: str) -> CuttableProxy:
    """A proxy listening on the Unix socket ``listen`` to the Unix socket ``target``."""
    return CuttableProxy(socket.AF_UNIX, str(listen), target)


def docker_socket() -> str:
    """The Docker engine's Unix socket the suite uses (``DOCKER_HOST`` or the default)."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    return host.removeprefix("unix://")


def through(proxy: CuttableProxy, database_url: str) -> str:
    """``database_url`` rewritten to reach its server through ``proxy``, in plain text (``sslmode=disable``:
    a :class:`PgProxy` reads the statements)."""
    parts = urlsplit(database_url)
    host, port = proxy.address  # type: ignore[misc]
    userinfo = parts.netloc.rpartition("@")[0]
    query = "&".join(q for q in (parts.query, "sslmode=disable") if q)
    return urlunsplit(
        parts._replace(netloc=f"{userinfo}@{host}:{port}" if userinfo else f"{host}:{port}", query=query)
    )


# --- PostgreSQL: faults at a chosen statement -------------------------------------------------------------

#: Statements of a duel's worker that tests fail the database at (:meth:`PgProxy.trap` patterns).
#: The duel's first statement after its claim: the read of its competitors' data folders.
DUEL_DATA_FOLDER_READ = r'SELECT "core_storedagentdata"\."archive"'
#: The lock taken by the write of the matches a running duel played so far (running duels only).
DUEL_LIVE_MATCHES_LOCK = r"\"core_duel\"\.\"state\" IN \('RUNNING'\)\) ORDER BY .* FOR UPDATE"
#: The lock taken by the record of a duel's result (every state a result is accepted in, these first).
DUEL_RECORD_LOCK = r"\"core_duel\"\.\"state\" IN \('QUEUED', 'RUNNING'.* FOR UPDATE"
#: The record's write of the FINISHED duel (its COMMIT follows).
DUEL_FINISHED_WRITE = r"UPDATE \"core_duel\" SET .*\"state\" = 'FINISHED'"

_SSL_REQUEST, _GSSENC_REQUEST, _CANCEL_REQUEST = 80877103, 80877104, 80877102


@dataclass
class Trap:
    """A one-shot fault at the first client statement matching ``pattern`` (a regular expression over the
    wire message: the SQL text of a simple or extended query), on a connection that already sent a
    statement matching ``after`` (``None``: any connection). ``action``:

    - ``"cut"``: the statement never reaches the server; the database goes away (``cut()``) right there;
    - ``"cut-after-reply"``: the server executes it, its reply is swallowed, then the database goes away
      (a COMMIT that succeeded while the client never heard so);
    - ``"hold"``: the statement waits in the proxy until :meth:`release` (the client just sees a slow
      server; its other connections keep working).

    ``fired`` is set once the trap went off (for ``"hold"``: once the statement is held).
    """

    pattern: re.Pattern[bytes]
    action: str
    after: re.Pattern[bytes] | None = None
    fired: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)
    statement: bytes = b""

    def release(self) -> None:
        self.released.set()

    def wait(self, timeout: float, what: str) -> None:
        """Wait until the trap went off; fail the test after ``timeout`` s."""
        if not self.fired.wait(timeout):
            pytest.fail(f"timed out after {timeout}s waiting for {what}")


class _PgConnection:
    """What the pumps of one proxied connection share."""

    def __init__(self) -> None:
        self.seen: set[int] = set()  # ids of the traps whose ``after`` this connection matched
        self.swallow: Trap | None = None  # drop the next reply, then cut


class PgProxy(CuttableProxy):
    """A :class:`CuttableProxy` that reads the PostgreSQL wire protocol from the client (plain TCP: the
    worker's URL asks for ``sslmode=disable``), so a test can fail the database at one exact statement
    (:meth:`trap`) instead of at a moment chosen by the clock."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._traps: list[Trap] = []
        self.statements: list[bytes] = []  # every statement the client sent, for a failing test's message
        super().__init__(*args, **kwargs)

    def trap(self, pattern: str, action: str = "cut", *, after: str | None = None) -> Trap:
        """Arm a one-shot :class:`Trap` (see there) and return it."""
        if action not in ("cut", "cut-after-reply", "hold"):
            raise ValueError(action)
        trap = Trap(
            re.compile(pattern.encode(), re.S), action, re.compile(after.encode(), re.S) if after else None
        )
        with self._lock:
            self._traps.append(trap)
        return trap

    def _start_pumps(self, client: socket.socket, upstream: socket.socket) -> None:
        shared = _PgConnection()
        threading.Thread(target=self._pump_client, args=(client, upstream, shared), daemon=True).start()
        threading.Thread(target=self._pump_server, args=(upstream, client, shared), daemon=True).start()

    def _matching_trap(self, message: bytes, shared: _PgConnection) -> Trap | None:
        with self._lock:
            for trap in self._traps:
                if trap.after is not None and id(trap) not in shared.seen and trap.after.search(message):
                    shared.seen.add(id(trap))
                    continue
                if (trap.after is None or id(trap) in shared.seen) and trap.pattern.search(message):
                    self._traps.remove(trap)
                    trap.statement = message
                    return trap
        return None

    def _pump_client(self, source: socket.socket, sink: socket.socket, shared: _PgConnection) -> None:
        buffer = b""
        started = False
        try:
            while data := source.recv(65536):
                buffer += data
                while True:
                    if not started:  # untyped: SSL/GSS requests, cancel, then the startup message
                        if len(buffer) < 8 or len(buffer) < int.from_bytes(buffer[:4], "big"):
                            break
                        size = int.from_bytes(buffer[:4], "big")
                        code = int.from_bytes(buffer[4:8], "big")
                        started = code not in (_SSL_REQUEST, _GSSENC_REQUEST, _CANCEL_REQUEST)
                    else:
                        if len(buffer) < 5 or len(buffer) < 1 + int.from_bytes(buffer[1:5], "big"):
                            break
                        size = 1 + int.from_bytes(buffer[1:5], "big")
                    message, buffer = buffer[:size], buffer[size:]
                    trap = None
                    if started and message[:1] in b"QP":
                        self.statements.append(message[5:])
                        trap = self._matching_trap(message, shared)
                    if trap is not None and trap.action == "cut":
                        trap.fired.set()
                        self.cut()
                        return
                    if trap is not None and trap.action == "hold":
                        trap.fired.set()
                        trap.released.wait()
                    if trap is not None and trap.action == "cut-after-reply":
                        shared.swallow = trap
                    sink.sendall(message)
        except OSError:
            pass
        finally:
            self._close_pair(source, sink)

    def _pump_server(self, source: socket.socket, sink: socket.socket, shared: _PgConnection) -> None:
        try:
            while data := source.recv(65536):
                if shared.swallow is not None:  # the reply to the trapped statement: the client never sees it
                    shared.swallow.fired.set()
                    self.cut()
                    return
                sink.sendall(data)
        except OSError:
            pass
        finally:
            self._close_pair(source, sink)

    def _close_pair(self, source: socket.socket, sink: socket.socket) -> None:
        for s in (source, sink):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        with self._lock:
            self._conns.discard(source)
            self._conns.discard(sink)


def pg_proxy(host: str, port: int) -> PgProxy:
    """A :class:`PgProxy` on 127.0.0.1 (free port) to ``host:port``."""
    return PgProxy(socket.AF_INET, ("127.0.0.1", 0), (host, port))
