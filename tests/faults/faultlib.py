"""Fault injection between real processes: a cuttable proxy in front of PostgreSQL or the Docker engine.

A worker under test is pointed at the proxy instead of the service. ``cut()`` drops every open
connection and refuses new ones (what a worker sees when PostgreSQL or the engine goes away);
``restore()`` listens again on the same address. The service itself never stops, so the test process
keeps its own direct connection to observe and assert.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


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
    """``database_url`` rewritten to reach its server through ``proxy``."""
    parts = urlsplit(database_url)
    host, port = proxy.address  # type: ignore[misc]
    userinfo = parts.netloc.rpartition("@")[0]
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{host}:{port}" if userinfo else f"{host}:{port}"))
