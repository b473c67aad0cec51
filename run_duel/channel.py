"""Newline-delimited JSON over a file descriptor, with a deadline and a byte cap on every read.

The referee owns one ``Channel`` per agent. It wraps either a pair of pipe ends (local sandbox) or a
connected Unix stream socket (Docker sandbox). Reads never block past their deadline and never buffer
more than ``max_bytes`` of a line, whatever the agent does.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import time
from collections.abc import Callable
from typing import Any

import orjson

from run_duel.outcomes import ErrorKind


class ChannelError(Exception):
    """Base class: the agent broke the conversation. ``kind`` is the referee's error kind."""

    kind = "PROTOCOL"


class ChannelTimeout(ChannelError):
    kind = ErrorKind.TIMEOUT


class ChannelClosed(ChannelError):
    kind = ErrorKind.CRASH


class ChannelOverflow(ChannelError):
    kind = ErrorKind.OUTPUT_LIMIT


class ChannelGarbage(ChannelError):
    kind = ErrorKind.BAD_OUTPUT


#: The referee's own messages (states, legal actions, rewards: plain JSON values) as one NDJSON line.
#: Replies are decoded by the standard library below: its strictness is what the error messages name.
_OPT_LINE = orjson.OPT_APPEND_NEWLINE


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_json_decode = json.JSONDecoder(parse_constant=_reject_constant).decode
#: The harness's reply to a move, as its encoder writes it for an int action: ``_decode`` reads these
#: (a non-negative int without leading zeros) without the JSON decoder; every other line goes through it.
_ACTION_PREFIX = b'{"type":"action","action":'
_ACTION_DIGITS = len(_ACTION_PREFIX)
_CLOSING_BRACE = ord("}")
_ZERO = ord("0")
_ENDED = b'{"type":"ended"}'


class Channel:
    """A bidirectional NDJSON channel. ``read_fd`` and ``write_fd`` may be the same (a socket)."""

    def __init__(self, read_fd: int, write_fd: int, *, close_fds: tuple[int, ...] | None = None) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self._close_fds = close_fds if close_fds is not None else tuple({read_fd, write_fd})
        self._buffer = bytearray()
        self._closed = False
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        self._poll_in = select.poll()
        self._poll_in.register(read_fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        self._poll_out = select.poll()
        self._poll_out.register(write_fd, select.POLLOUT | select.POLLHUP | select.POLLERR)

    def send(
        self, message: dict[str, Any], timeout: float, before_wait: Callable[[], object] | None = None
    ) -> None:
        """Write one message; raise ``ChannelTimeout`` if the agent does not drain it in time.
        ``before_wait`` is called before waiting for the agent to read (the seat thaws it then)."""
        data = orjson.dumps(message, option=_OPT_LINE)
        try:
            written = os.write(self.write_fd, data)
        except BlockingIOError:
            written = 0
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            if isinstance(exc, OSError) and exc.errno not in (errno.EPIPE, errno.ECONNRESET, errno.EBADF):
                raise
            raise ChannelClosed("the agent closed its end of the channel") from exc
        if written < len(data):  # the agent is not reading: wait for room, at most ``timeout``
            if before_wait is not None:
                before_wait()
            self._send_rest(memoryview(data)[written:], time.monotonic() + timeout)

    def _send_rest(self, view: memoryview, deadline: float) -> None:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._poll_out.poll(remaining * 1000):
                raise ChannelTimeout("the agent stopped reading its input")
            try:
                view = view[os.write(self.write_fd, view) :]
            except BlockingIOError:
                continue
            except (BrokenPipeError, ConnectionResetError, OSError) as exc:
                if isinstance(exc, OSError) and exc.errno not in (errno.EPIPE, errno.ECONNRESET, errno.EBADF):
                    raise
                raise ChannelClosed("the agent closed its end of the channel") from exc
            if not view:
                return

    def recv(self, timeout: float, max_bytes: int) -> dict[str, Any]:
        """Read one JSON object line within ``timeout`` seconds and ``max_bytes`` bytes."""
        buffer = self._buffer
        newline = buffer.find(b"\n")
        if newline < 0:
            deadline = time.monotonic() + timeout
            remaining = timeout
            while True:
                if len(buffer) > max_bytes:
                    raise ChannelOverflow(f"reply longer than {max_bytes} bytes without a newline")
                if remaining <= 0:
                    raise ChannelTimeout(f"no complete reply within {timeout:g} s")
                if self._poll_in.poll(max(remaining * 1000, 1)):
                    try:
                        chunk = os.read(self.read_fd, 65536)
                    except BlockingIOError:
                        chunk = None
                    except (ConnectionResetError, OSError) as exc:
                        raise ChannelClosed(f"channel error: {exc}") from exc
                    if chunk is not None:
                        if not chunk:
                            raise ChannelClosed("the agent closed the channel (exited or crashed)")
                        start = len(buffer)
                        buffer += chunk
                        newline = buffer.find(b"\n", start)
                        if newline >= 0:
                            break
                remaining = deadline - time.monotonic()
        return self._take_line(buffer, newline, max_bytes)

    def _take_line(self, buffer: bytearray, newline: int, max_bytes: int) -> dict[str, Any]:
        """Remove the line ending at ``newline`` from ``buffer`` and decode it (at most ``max_bytes``)."""
        line = bytes(buffer[:newline])
        del buffer[: newline + 1]
        if len(line) > max_bytes:
            raise ChannelOverflow(f"reply longer than {max_bytes} bytes")
        return self._decode(line)

    def wait_closed(self, timeout: float, max_bytes: int = 65536) -> bool:
        """Wait up to ``timeout`` seconds for the agent to close its end (it exited, or obeyed ``close``),
        discarding at most ``max_bytes`` of anything it still sends. True once the channel is closed."""
        deadline = time.monotonic() + timeout
        discarded = 0
        while discarded <= max_bytes:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._poll_in.poll(remaining * 1000):
                return False
            try:
                chunk = os.read(self.read_fd, 65536)
            except BlockingIOError:
                continue
            except OSError:
                return True
            if not chunk:
                return True
            discarded += len(chunk)
        return False

    @staticmethod
    def _decode(line: bytes) -> dict[str, Any]:
        # The harness's usual replies, read without the JSON decoder (same values as it would give).
        if line.startswith(_ACTION_PREFIX):
            digits = line[_ACTION_DIGITS:-1]
            if line[-1] == _CLOSING_BRACE and digits.isdigit() and (len(digits) == 1 or digits[0] != _ZERO):
                return {"type": "action", "action": int(digits)}
        elif line == _ENDED:
            return {"type": "ended"}
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ChannelGarbage(f"reply is not UTF-8: {line[:80]!r}") from exc
        try:
            value = _json_decode(text)
        except (ValueError, RecursionError) as exc:
            raise ChannelGarbage(f"reply is not JSON: {text[:120]!r}") from exc
        if not isinstance(value, dict):
            raise ChannelGarbage(f"reply is not a JSON object: {text[:120]!r}")
        return value

    def close(self) -> None:
        """Close the underlying descriptors (idempotent)."""
        if self._closed:
            return
        self._closed = True
        for fd in self._close_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
