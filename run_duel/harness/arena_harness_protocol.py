"""The harness's side of the protocol: encoding replies, errors and actions, and the transports (the
process's own stdin/stdout, or the referee's Unix socket). Standard library only."""

from __future__ import annotations

import importlib
import json
import os
import socket
import sys
import time
import traceback

MAX_TRACEBACK = 8000
MAX_REPR = 200
CONNECT_RETRY_S = 10.0

ENDED = b'{"type":"ended"}\n'
READY = b'{"type":"ready"}\n'
dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False, ensure_ascii=True).encode
#: The harness's own folder: frames of its files are left out of the user's tracebacks.
HERE = os.path.dirname(os.path.abspath(__file__))


class ProtocolError(Exception):
    """The referee sent something the harness does not understand."""


def _cap(text: str, limit: int) -> str:
    """Keep the tail of ``text`` (the end of a traceback is the useful part)."""
    if len(text) <= limit:
        return text
    return "...(truncated)...\n" + text[-limit:]


def _is_ours(filename: str) -> bool:
    """Frames of the harness or of the import machinery (hidden from the user's traceback)."""
    ours = os.path.dirname(filename) == HERE and os.path.basename(filename).startswith("arena_harness")
    return ours or filename.startswith("<frozen ") or filename == importlib.__file__


def error_message(exc: BaseException) -> bytes:
    """Encode a user exception as an ``error`` message; robust when memory is short."""
    name = type(exc).__name__
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None and _is_ours(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next  # the user's frames are what the author needs to see
    try:
        text = "".join(traceback.format_exception(type(exc), exc, tb))
    except MemoryError:
        text = f"{name}: (traceback unavailable: out of memory)"
    try:
        return (
            dumps({"type": "error", "exception": name, "message": _cap(text, MAX_TRACEBACK)}) + "\n"
        ).encode()
    except MemoryError:
        return b'{"type":"error","exception":"MemoryError","message":"MemoryError"}\n'


def encode_action(action: object) -> bytes:
    """Encode the Player's return value as an ``action`` message.

    Python ints go through as is; numpy integers and 0-d or size-1 integer arrays become ints; numpy
    floats and size-1 float arrays become floats; other JSON values (floats, strings, ...) are sent as
    they are for the referee to judge (it takes a whole-number float as that int); anything that is not
    JSON-able (or NaN/Infinity) is sent as ``null`` with a capped ``repr``.
    """
    if type(action) is int:
        return b'{"type":"action","action":%d}\n' % action
    np = sys.modules.get("numpy")
    if np is not None:
        if isinstance(action, np.integer):
            return b'{"type":"action","action":%d}\n' % int(action)
        if isinstance(action, np.ndarray) and action.size == 1 and action.dtype.kind in "iu":
            return b'{"type":"action","action":%d}\n' % int(action.reshape(()).item())
        if isinstance(action, np.ndarray) and action.size == 1 and action.dtype.kind == "f":
            action = action.reshape(()).item()  # a float: the referee takes 3.0 as 3, refuses 3.5
        if isinstance(action, np.generic):
            action = action.item()
    try:
        return (dumps({"type": "action", "action": action}) + "\n").encode()
    except (TypeError, ValueError, OverflowError, RecursionError):
        try:
            text = repr(action)
        except Exception as exc:  # a user __repr__ may raise anything
            text = f"<unrepresentable {type(action).__name__}: {type(exc).__name__}>"
        if len(text) > MAX_REPR:
            text = text[:MAX_REPR] + "..."
        return (dumps({"type": "action", "action": None, "repr": text}) + "\n").encode()


class Transport:
    """Line-oriented reads and whole-message writes on the protocol descriptors."""

    def __init__(self, read_fd: int, write_fd: int, sock: socket.socket | None = None) -> None:
        self._reader = os.fdopen(read_fd, "rb", buffering=65536, closefd=sock is None)
        self._write_fd = write_fd
        self._sock = sock

    def readline(self) -> bytes:
        return self._reader.readline()

    def write(self, data: bytes) -> None:
        if self._sock is not None:
            self._sock.sendall(data)
            return
        view = memoryview(data)
        while view:
            view = view[os.write(self._write_fd, view) :]

    def close(self) -> None:
        """Close our end now, so the referee sees end-of-file before the interpreter shuts down."""
        try:
            self._reader.close()
            if self._sock is not None:
                self._sock.close()
            else:
                os.close(self._write_fd)
        except OSError:
            pass


def stdio_transport() -> Transport:
    """Move the protocol off fds 0/1 so that the user's prints go to stderr."""
    read_fd = os.dup(0)
    write_fd = os.dup(1)
    os.set_inheritable(read_fd, False)
    os.set_inheritable(write_fd, False)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return Transport(read_fd, write_fd)


def socket_transport(path: str) -> Transport:
    """Connect to the referee's Unix socket, retrying while it does not exist yet."""
    deadline = time.monotonic() + CONNECT_RETRY_S
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            break
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return Transport(sock.fileno(), sock.fileno(), sock)
