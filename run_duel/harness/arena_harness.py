"""RL Arena agent harness: imports the user's ``player.py`` and serves the referee's NDJSON protocol.

This file is copied into every agent image, so it is self-contained: standard library and numpy only,
never ``run_duel``. Usage::

    python arena_harness.py --agent-dir DIR [--connect UNIX_SOCKET_PATH]

Without ``--connect`` the protocol runs over the process's original stdin/stdout, which the harness
moves to private descriptors first: afterwards fd 0 reads ``/dev/null`` and fd 1 (and ``sys.stdout``)
write to stderr, so a ``print()`` in the user's code can never corrupt the protocol. With ``--connect``
the protocol runs over a Unix stream socket (retried briefly until the referee's socket exists).

Messages are described in ``run_duel/README.md``. Exceptions raised by the user's code are reported as
``{"type": "error", ...}`` and the harness keeps serving; only ``close``, end of input or a fatal error
in the harness itself make it exit.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import socket
import sys
import time
import traceback

MAX_TRACEBACK = 8000
MAX_REPR = 200
CONNECT_RETRY_S = 10.0

_ENDED = b'{"type":"ended"}\n'
_READY = b'{"type":"ready"}\n'
_dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False, ensure_ascii=True).encode


class ProtocolError(Exception):
    """The referee sent something the harness does not understand."""


def _cap(text: str, limit: int) -> str:
    """Keep the tail of ``text`` (the end of a traceback is the useful part)."""
    if len(text) <= limit:
        return text
    return "...(truncated)...\n" + text[-limit:]


def _is_ours(filename: str) -> bool:
    """Frames of the harness or of the import machinery (hidden from the user's traceback)."""
    return filename == __file__ or filename.startswith("<frozen ") or filename == importlib.__file__


def _error_message(exc: BaseException) -> bytes:
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
            _dumps({"type": "error", "exception": name, "message": _cap(text, MAX_TRACEBACK)}) + "\n"
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
        return (_dumps({"type": "action", "action": action}) + "\n").encode()
    except (TypeError, ValueError, OverflowError, RecursionError):
        try:
            text = repr(action)
        except Exception as exc:  # a user __repr__ may raise anything
            text = f"<unrepresentable {type(action).__name__}: {type(exc).__name__}>"
        if len(text) > MAX_REPR:
            text = text[:MAX_REPR] + "..."
        return (_dumps({"type": "action", "action": None, "repr": text}) + "\n").encode()


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


def _stdio_transport() -> Transport:
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


def _socket_transport(path: str) -> Transport:
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


def load_player(agent_dir: str) -> object:
    """Import ``player.py`` (else ``main.py``) from ``agent_dir``; build its Player.

    ``agent_dir`` is made cwd and first on ``sys.path``. A module without a ``Player`` class but with a
    Kaggle-style ``agent(observation, configuration)`` function is wrapped in a ``KaggleAdapter``.
    """
    agent_dir = os.path.abspath(agent_dir)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.path.insert(0, agent_dir)
    os.chdir(agent_dir)
    numpy = importlib.import_module("numpy")  # before user code, so that encode_action always finds it
    seed = os.environ.get("ARENA_SEED")
    if seed:  # reproducible duels: seed the global RNGs the user's code is most likely to use
        random.seed(int(seed))
        numpy.random.seed(int(seed) % 2**32)
    entry = "player" if os.path.exists(os.path.join(agent_dir, "player.py")) else "main"
    if entry == "main" and not os.path.exists(os.path.join(agent_dir, "main.py")):
        entry = "player"  # neither file: let the import error name player.py
    module = importlib.import_module(entry)
    player_class = getattr(module, "Player", None)
    if player_class is not None:
        return player_class(False)
    agent = getattr(module, "agent", None)
    if callable(agent):
        return KaggleAdapter(agent)
    raise AttributeError(
        f"{entry}.py defines neither a Player class nor a Kaggle-style agent(observation, configuration)"
    )


class KaggleStruct(dict):
    """A dict whose keys are also attributes, like Kaggle's ``Struct`` (``obs.board`` == ``obs["board"]``)."""

    def __getattr__(self, name: str) -> object:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: object) -> None:
        self[name] = value


class KaggleAdapter:
    """Runs a Kaggle-style ``agent(observation, configuration)`` as a Player.

    The game is inferred from the observation's shape: (6, 7) is ConnectX (``board``: 42 ints, row 0 at
    the top, 0 empty, 1 and 2 the marks; ``mark``: the agent's own, 1 when it moved first; the
    configuration has ``rows`` 6, ``columns`` 7, ``inarow`` 4; the agent returns a column) and (3, 3) is
    Kaggle's TicTacToe (``board``: 9 ints, returns a cell 0..8). Other games raise ``ValueError``.
    """

    CONFIGS = {
        (6, 7): {"rows": 6, "columns": 7, "inarow": 4},
        (3, 3): {"rows": 3, "columns": 3, "inarow": 3},
    }

    def __init__(self, agent: object) -> None:
        self.agent = agent
        code = getattr(agent, "__code__", None)
        self.wants_configuration = code is None or code.co_argcount >= 2 or bool(code.co_flags & 0x04)

    def start(self, state: object, valid_actions: object) -> object:
        return self._act(state)

    def step(self, state: object, valid_actions: object, prev_reward: object) -> object:
        return self._act(state)

    def end(self, state: object, prev_reward: object) -> None:
        return None

    def _act(self, state: object) -> object:
        shape = tuple(getattr(state, "shape", ()))
        config = self.CONFIGS.get(shape)
        if config is None:
            raise ValueError(
                f"Kaggle-style agent(observation, configuration) is supported for ConnectX (6, 7) and "
                f"TicTacToe (3, 3) observations, not shape {shape}: write a Player class instead"
            )
        cells = [int(v) for v in state.ravel().tolist()]
        mine, theirs = cells.count(1), cells.count(-1)
        mark = 1 if mine == theirs else 2
        board = [0 if v == 0 else (mark if v == 1 else 3 - mark) for v in cells]
        observation = KaggleStruct(board=board, mark=mark, step=mine + theirs, remainingOverageTime=60)
        configuration = KaggleStruct(config, episodeSteps=1000, actTimeout=1, agentTimeout=60, timeout=1)
        if self.wants_configuration:
            return self.agent(observation, configuration)
        return self.agent(observation)


def serve(transport: Transport, player: object) -> int:
    """Answer the referee's messages until ``close`` or end of input. Returns the exit code."""
    import numpy as np

    asarray = np.asarray
    int64 = np.int64
    loads = json.loads
    readline = transport.readline
    write = transport.write
    while True:
        line = readline()
        if not line:
            return 0
        msg = loads(line)
        kind = msg.get("type")
        try:
            if kind == "step":
                reply = encode_action(
                    player.step(
                        asarray(msg["state"]), asarray(msg["valid_actions"], dtype=int64), msg["reward"]
                    )
                )
            elif kind == "start":
                reply = encode_action(
                    player.start(asarray(msg["state"]), asarray(msg["valid_actions"], dtype=int64))
                )
            elif kind == "end":
                player.end(asarray(msg["state"]), msg["reward"])
                reply = _ENDED
            elif kind == "close":
                transport.close()
                return 0
            else:
                raise ProtocolError(f"unknown message type {kind!r}")
        except Exception as exc:
            reply = _error_message(exc)
            del exc
        write(reply)


def main(argv: list[str] | None = None) -> int:
    """Entry point: parse arguments, set up the transport, load the player, serve."""
    parser = argparse.ArgumentParser(description="RL Arena agent harness")
    parser.add_argument("--agent-dir", required=True, help="folder holding player.py")
    parser.add_argument("--connect", help="Unix socket of the referee (default: stdin/stdout)")
    args = parser.parse_args(argv)
    transport = _socket_transport(args.connect) if args.connect else _stdio_transport()
    try:
        player = load_player(args.agent_dir)
    except Exception as exc:
        transport.write(_error_message(exc))
        traceback.print_exc()
        return 1
    transport.write(_READY)
    return serve(transport, player)


if __name__ == "__main__":
    sys.exit(main())
