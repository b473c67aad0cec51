"""A thread that drains a pipe into a buffer keeping only its last bytes: an agent's stderr.

Used by the local sandbox (every agent process) and by the Docker sandbox's warm seats (a warm agent
process writes its stderr to a pipe; a cold container's comes from the engine's logs).
"""

from __future__ import annotations

import contextlib
import os
import select
import threading


class TailReader(threading.Thread):
    """Drains a pipe into a buffer that keeps only the last ``limit`` bytes."""

    def __init__(self, fd: int, limit: int) -> None:
        super().__init__(name=f"stderr-{fd}", daemon=True)
        self.fd = fd
        self.limit = limit
        self.total = 0
        self._buf = bytearray()
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._eof = threading.Event()

    def run(self) -> None:
        try:
            self._pump()
        finally:
            self._eof.set()

    def drain(self, timeout: float) -> None:
        """Wait (up to ``timeout``) until every writer has closed the pipe and all was read."""
        self._eof.wait(timeout)

    def _pump(self) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        while not self._stop_event.is_set():
            if not poller.poll(100):
                continue
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self.total += len(chunk)
                self._buf += chunk
                if len(self._buf) > self.limit:
                    del self._buf[: len(self._buf) - self.limit]

    def text(self) -> str:
        with self._lock:
            data = bytes(self._buf)
            dropped = self.total - len(data)
        text = data.decode("utf-8", errors="replace")
        return f"[... {dropped} earlier bytes dropped ...]\n{text}" if dropped > 0 else text

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=1.0)
        with contextlib.suppress(OSError):
            os.close(self.fd)
