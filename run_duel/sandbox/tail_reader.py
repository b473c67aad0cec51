"""A thread that drains a pipe into a buffer keeping only its last bytes: an agent's stderr.

Used by the local sandbox (every agent process) and by the Docker sandbox's warm seats (a warm agent
process writes its stderr to a pipe; a cold container's comes from the engine's logs).

``text`` first reads, in the caller's thread, whatever the pipe still holds: an agent that prints a line
and then fails writes the line before its reply, so the referee quoting its stderr in that fault sees the
line even when the reader thread has not been scheduled since (a loaded machine).
"""

from __future__ import annotations

import contextlib
import os
import select
import threading

#: Reads of up to 64 KiB that ``text`` makes of what the pipe holds (a pipe holds 64 KiB unless enlarged).
CATCH_UP_READS = 4


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
        self._closed = False
        # Reads never block, so ``text`` and the thread can both read under ``_lock`` (whoever holds it
        # appends what it read before the other reads on: the buffer keeps the pipe's order).
        os.set_blocking(fd, False)

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
            with self._lock:
                if self._read_available(1):
                    return

    def _read_available(self, reads: int) -> bool:
        """Append what the pipe holds now, in at most ``reads`` reads (an agent writing without pause must
        not keep its reader here); the caller holds ``_lock``. True at end of input or on an error."""
        for _ in range(reads):
            if self._closed:
                return True
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                return False
            except OSError:
                return True
            if not chunk:
                return True
            self.total += len(chunk)
            self._buf += chunk
            if len(self._buf) > self.limit:
                del self._buf[: len(self._buf) - self.limit]
        return False

    def text(self) -> str:
        """The tail kept, after reading what the pipe holds now (see the module's docstring)."""
        with self._lock:
            self._read_available(CATCH_UP_READS)
            data = bytes(self._buf)
            dropped = self.total - len(data)
        text = data.decode("utf-8", errors="replace")
        return f"[... {dropped} earlier bytes dropped ...]\n{text}" if dropped > 0 else text

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=1.0)
        with self._lock:  # no read after the close: the descriptor's number may be reused
            self._closed = True
            with contextlib.suppress(OSError):
                os.close(self.fd)
