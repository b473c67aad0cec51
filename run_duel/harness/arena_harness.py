"""RL Arena agent harness: imports the user's ``player.py`` and serves the referee's NDJSON protocol.

This file is copied into every agent image, so it is self-contained: standard library and numpy only,
never ``run_duel``. Usage::

    python3 -I -B -u arena_harness.py --agent-dir DIR [--packages DIR]
                                      [--connect UNIX_SOCKET_PATH | --warm CONTROL_SOCKET_PATH]

It always starts isolated (``-I``: no ``PYTHONPATH``, no user site, not even its own folder on
``sys.path``), so nothing the agent brought (a package's ``sitecustomize.py``, a ``.pth`` file, a module
shadowing one we import) runs before its seat is ready. The agent's installed packages (``--packages``,
default ``/opt/agent-packages``) are added only in the agent's own process, once the referee has
prepared the seat (``add_packages``): after connecting (the referee names its socket only once the data
folder is filled), after the warm factory's go byte, or on stdin/stdout under bubblewrap (which starts
Python only once the folder is filled).

Without ``--connect`` the protocol runs over the process's original stdin/stdout, which the harness
moves to private descriptors first: afterwards fd 0 reads ``/dev/null`` and fd 1 (and ``sys.stdout``)
write to stderr, so a ``print()`` in the user's code can never corrupt the protocol. With ``--connect``
the protocol runs over a Unix stream socket (retried briefly until the referee's socket exists).

With ``--warm`` the harness is the warm container's first process (PID 1): it imports numpy (unless the
agent's packages bring their own), then forks one fresh agent process per duel on the referee's request
and cleans the container after each (see ``warm_main`` and "Warm sandboxes" in ``run_duel/README.md``).

Messages are described in ``run_duel/README.md``. Exceptions raised by the user's code are reported as
``{"type": "error", ...}`` and the harness keeps serving; only ``close``, end of input or a fatal error
in the harness itself make it exit.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import random
import select
import signal
import socket
import sys
import time
import traceback
from typing import Any

MAX_TRACEBACK = 8000
MAX_REPR = 200
CONNECT_RETRY_S = 10.0
#: Where our image build installs the agent's ``requirements.txt`` (never on ``PYTHONPATH`` at start-up).
PACKAGES_DIR = "/opt/agent-packages"

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


def add_packages(folder: str) -> None:
    """Make the agent's installed packages importable, in the agent's own process once its seat is ready
    (never in the warm factory): ``site.addsitedir`` (so their ``.pth`` files work, as in a site-packages
    folder), placed ahead of the system's packages as ``PYTHONPATH`` would be (a pinned numpy wins over
    the image's), and exported on ``PYTHONPATH`` for the agent's own Python subprocesses. Nothing when
    the folder does not exist (no ``requirements.txt``)."""
    if not folder or not os.path.isdir(folder):
        return
    import site

    before = list(sys.path)
    site.addsitedir(folder)
    sys.path[:] = [p for p in sys.path if p not in before] + before
    os.environ["PYTHONPATH"] = folder


def ships_numpy(folder: str) -> bool:
    """Whether the agent's packages may bring their own numpy (a folder listing: no code of theirs runs).
    A ``.pth`` file counts, since it may put another folder on the path."""
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return any(n == "numpy" or n.startswith(("numpy.", "numpy-")) or n.endswith(".pth") for n in names)


def load_player(agent_dir: str) -> object:
    """Import ``player.py`` (else ``main.py``, else ``submission.py``) from ``agent_dir``; build its
    Player.

    ``agent_dir`` is made cwd and first on ``sys.path``. A module without a ``Player`` class is a Kaggle
    agent (``kaggle_agent``), wrapped in a ``KaggleAdapter``.
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
    # no entry file: let the import error name player.py
    entry = next((e for e in _ENTRIES if os.path.exists(os.path.join(agent_dir, e + ".py"))), "player")
    module = importlib.import_module(entry)
    agent_format = os.environ.get(FORMAT_ENV, "native")  # the platform's choice (LaunchSpec.agent_format)
    if agent_format == "rl-arena":
        return rl_arena_player(module, entry, os.environ.get(GAME_ENV, ""))
    player_class = getattr(module, "Player", None)
    if player_class is not None and agent_format != "kaggle":
        return player_class(False)
    return KaggleAdapter(kaggle_agent(module, entry))


#: The modules ``load_player`` imports, the first one present.
_ENTRIES = ("player", "main", "submission")


def kaggle_agent(module: object, entry: str) -> object:
    """The agent of a Kaggle-style module as Kaggle picks it (kaggle_environments executes the file and
    calls the last callable value of its namespace, in the order names were first bound, imported names
    and classes included). Our own convention for ``player.py``, a top-level function named ``agent``,
    comes first there."""
    namespace = vars(module)
    agent = namespace.get("agent")
    if entry == "player" and callable(agent):
        return agent
    found = [value for value in namespace.values() if callable(value)]
    if not found:
        raise AttributeError(
            f"{entry}.py defines neither a Player class nor a Kaggle-style agent function (Kaggle runs "
            "the last function of the file: agent(observation, configuration))"
        )
    return found[-1]


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

    The clock is the referee's (``set_clock``, from ``start`` and ``step``): ``actTimeout`` (and its old
    name ``timeout``) is the per-move limit, ``remainingOverageTime`` what is left of the match's time
    bank, ``agentTimeout`` (Kaggle's obsolete name for the overage) the bank a match starts with. As
    Kaggle does, the agent gets as many of (observation, configuration) as its function declares.
    """

    CONFIGS = {
        (6, 7): {"rows": 6, "columns": 7, "inarow": 4},
        (3, 3): {"rows": 3, "columns": 3, "inarow": 3},
    }

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        code = getattr(agent, "__code__", None)
        self.nargs = getattr(code, "co_argcount", 2)  # Kaggle passes args[:co_argcount]
        self.move_timeout = 1.0
        self.bank_at_start = 0.0
        self.bank = 0.0

    def set_clock(self, msg: dict) -> None:
        """Read the referee's clock fields of a ``start`` or ``step`` message."""
        if "move_timeout" in msg:
            self.move_timeout = float(msg["move_timeout"])
            self.bank_at_start = float(msg.get("time_bank", 0.0))
        self.bank = float(msg.get("time_bank", self.bank))

    def start(self, state: Any, valid_actions: Any) -> Any:
        return self._act(state)

    def step(self, state: Any, valid_actions: Any, prev_reward: Any) -> Any:
        return self._act(state)

    def end(self, state: Any, prev_reward: Any) -> None:
        return None

    def _act(self, state: Any) -> Any:
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
        observation = KaggleStruct(board=board, mark=mark, step=mine + theirs, remainingOverageTime=self.bank)
        configuration = KaggleStruct(
            config,
            episodeSteps=len(cells) + 1,
            actTimeout=self.move_timeout,
            timeout=self.move_timeout,
            agentTimeout=self.bank_at_start,
        )
        return self.agent(*(observation, configuration)[: self.nargs])


# -- the original rl-arena's format --------------------------------------------------------------------
#
# ``ARENA_AGENT_FORMAT=rl-arena``: a Player written for the original rl-arena project (github
# school-of-ai-angers/rl-arena, whose games this arena re-implements) plays unchanged. That project served
# its Player over HTTP (``Player(False)``; ``start(state, valid_actions)``, ``step(state, valid_actions,
# prev_reward)``, ``end(state, prev_reward)``; numpy arrays rebuilt from JSON, the action read back with
# ``int(action)``) and its match loop gave ``prev_reward`` = 0 during a match and, at the end, the win's
# reward to the winner and its negation to the loser. ``RlArenaAdapter`` rebuilds exactly those arguments
# from our observation for the seat and translates the action back; docs/PROTOCOL.md has the contract.

#: Environment variables through which the platform tells the harness the agent's format and the game.
FORMAT_ENV = "ARENA_AGENT_FORMAT"
GAME_ENV = "ARENA_GAME"


class RlArenaBoard:
    """Tic-tac-toe and Connect Four as rl-arena encoded them: the cells flattened row by row (row 0 at
    the top) holding 1 for the FIRST player's marks and -1 for the second's, then the player to move
    (1 or -1; at the end, the player who moved last), as float64. Actions are the same ids as ours; a
    win is worth 1. Who moved first is derived from the piece count at the agent's first turn."""

    win_reward = 1

    def __init__(self) -> None:
        self.sign = 1  # 1 when this seat moved first in the current match

    def new_match(self, cells: Any) -> None:
        self.sign = 1 if int((cells != 0).sum()) % 2 == 0 else -1

    def auto_action(self, cells: Any, valid_actions: Any) -> int | None:
        return None  # every decision of ours is one of theirs

    def state(self, cells: Any, *, final: bool = False) -> Any:
        import numpy as np

        out = np.empty(cells.size + 1, dtype=np.float64)
        out[:-1] = cells * self.sign
        if final:
            out[-1] = 1.0 if int((cells != 0).sum()) % 2 else -1.0  # rl-arena left the last mover there
        else:
            out[-1] = float(self.sign)
        return out

    def valid_actions(self, valid_actions: Any) -> Any:
        return valid_actions

    def action(self, action: int, theirs: Any) -> int:
        return action

    def moved(self, cells: Any, action: int) -> None:
        pass


class RlArenaQuarto:
    """Quarto as rl-arena encoded it: 17 int64, each cell's piece id or -1, then the piece to place;
    action ``16 * position + piece``; a win is worth 100.

    Two rules differ from ours. rl-arena's first player places piece 15 on the empty board (nobody
    chooses it), where ours has the opening player choose any piece. Flipping a bit of every piece (an
    attribute's two values swapped) maps a game onto an equivalent one, so the adapter relabels pieces
    with ``piece ^ mask``, ``mask = first piece ^ 15``, for the whole match: the agent always sees
    rl-arena's opening (piece 15 to place) and only states its environment could produce. When this seat
    opens it gives piece 15 itself without asking the agent (mask 0). And rl-arena places the last piece
    automatically where ours asks the player holding it (one legal action): the adapter answers that too.
    The final state's last value is the last piece handed over, as rl-arena left it; after an opponent's
    winning placement before the board is full, which piece the opponent named is not sent to this seat
    (the choice is void in both rule sets), so the lowest unused piece stands for it.
    """

    win_reward = 100

    def __init__(self) -> None:
        self.mask = 0
        self.handed = -1  # the piece handed over last, in our labels
        self.pieces_after_mine = -1  # pieces on the board after this seat's last action

    def new_match(self, cells: Any) -> None:
        first = int(cells[16])
        self.mask = 0 if first < 0 else first ^ 15
        self.handed = first
        self.pieces_after_mine = -1

    def auto_action(self, cells: Any, valid_actions: Any) -> int | None:
        if int(cells[16]) < 0:
            self.pieces_after_mine = 0
            self.handed = 15
            return 17 * 16 + 15  # the opening: hand over piece 15, as rl-arena's rules fix it
        if len(valid_actions) == 1 and int(valid_actions[0]) % 17 == 16:
            self.pieces_after_mine = 16
            self.handed = int(cells[16])
            return int(valid_actions[0])  # the last piece: rl-arena places it without asking
        return None

    def state(self, cells: Any, *, final: bool = False) -> Any:
        import numpy as np

        mask = self.mask
        out = np.array([v ^ mask if v >= 0 else -1 for v in cells.tolist()], dtype=np.int64)
        if not final:
            self.handed = int(cells[16])
            return out
        placed = int((cells[:16] >= 0).sum())
        if placed == 16 or placed == self.pieces_after_mine:
            out[16] = self.handed ^ mask if self.handed >= 0 else -1
        else:  # the opponent's winning placement: the piece it named is not known here
            unused = sorted(set(range(16)) - {int(v) for v in out[:16]})
            out[16] = unused[0] if unused else -1
        return out

    def valid_actions(self, valid_actions: Any) -> Any:
        import numpy as np

        mask = self.mask
        theirs = sorted(16 * (a // 17) + ((a % 17) ^ mask) for a in valid_actions.tolist())
        return np.asarray(theirs, dtype=np.int64)

    def action(self, action: int, theirs: Any) -> int:
        if not 0 <= action < 256 or action not in theirs.tolist():
            return -1  # not one of its valid_actions: the referee refuses it
        return 17 * (action // 16) + ((action % 16) ^ self.mask)

    def moved(self, cells: Any, action: int) -> None:
        self.pieces_after_mine = int((cells[:16] >= 0).sum()) + 1
        self.handed = action % 17


#: The games rl-arena had, by our slug (theirs: tic-tac-toe, connect-four, quarto).
RL_ARENA_GAMES: dict[str, type[RlArenaBoard | RlArenaQuarto]] = {
    "tic-tac-toe": RlArenaBoard,
    "connect-four": RlArenaBoard,
    "quarto": RlArenaQuarto,
}


def rl_arena_player(module: Any, entry: str, game: str) -> RlArenaAdapter:
    """Build an rl-arena agent's Player (``Player(False)``, as rl-arena did) wrapped for ``game``."""
    codec = RL_ARENA_GAMES.get(game)
    if codec is None:
        raise ValueError(
            f"the rl-arena format exists for {', '.join(RL_ARENA_GAMES)}; this game is {game or 'unknown'}: "
            "choose the native format (upload option) and read this game's state encoding"
        )
    player_class = getattr(module, "Player", None)
    if player_class is None:
        raise AttributeError(f"{entry}.py defines no Player class, which an rl-arena agent must")
    return RlArenaAdapter(player_class(False), codec())


class RlArenaAdapter:
    """Runs a Player written for the original rl-arena, giving it that project's state arrays,
    valid-action lists and rewards (``RlArenaBoard``, ``RlArenaQuarto``) and translating its actions.
    The agent's ``start`` is its first decision of a match, ``end`` comes only after a ``start`` (as in
    rl-arena, where a match that failed never called ``end``)."""

    def __init__(self, player: Any, codec: RlArenaBoard | RlArenaQuarto) -> None:
        self.player = player
        self.codec = codec
        self.started = False  # the agent got its start() in this match

    def start(self, state: Any, valid_actions: Any) -> Any:
        self.started = False
        self.codec.new_match(state.ravel())
        return self._act(state, valid_actions)

    def step(self, state: Any, valid_actions: Any, prev_reward: Any) -> Any:
        return self._act(state, valid_actions)

    def _act(self, state: Any, valid_actions: Any) -> Any:
        cells = state.ravel()
        auto = self.codec.auto_action(cells, valid_actions)
        if auto is not None:
            return auto
        theirs = self.codec.valid_actions(valid_actions)
        their_state = self.codec.state(cells)
        if self.started:
            action = self.player.step(their_state, theirs, 0)
        else:
            self.started = True
            action = self.player.start(their_state, theirs)
        try:
            chosen = int(action)  # rl-arena's server read the action back with int(action)
        except (TypeError, ValueError, OverflowError):
            return action  # the referee refuses it, saying what it was
        ours = self.codec.action(chosen, theirs)
        if ours < 0:
            print(
                f"rl-arena adapter: the Player returned {chosen}, not one of its valid_actions "
                f"{theirs.tolist()[:20]}{' ...' if len(theirs) > 20 else ''}",
                file=sys.stderr,
            )
        else:
            self.codec.moved(cells, ours)
        return ours

    def end(self, state: Any, prev_reward: Any) -> None:
        if not self.started:
            return None
        self.started = False
        reward = float(prev_reward) * self.codec.win_reward
        final = self.codec.state(state.ravel(), final=True)
        return self.player.end(final, int(reward) if reward.is_integer() else reward)


def serve(transport: Transport, player: Any) -> int:
    """Answer the referee's messages until ``close`` or end of input. Returns the exit code."""
    import numpy as np

    asarray = np.asarray
    int64 = np.int64
    loads = json.loads
    readline = transport.readline
    write = transport.write
    set_clock = player.set_clock if isinstance(player, KaggleAdapter) else None
    while True:
        line = readline()
        if not line:
            return 0
        msg = loads(line)
        kind = msg.get("type")
        try:
            if set_clock is not None and kind in ("start", "step"):
                set_clock(msg)
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


# -- warm containers -------------------------------------------------------------------------------------
#
# ``--warm``: this process is PID 1 of a container that serves one revision for many duels, one at a time. It
# imports numpy once (unless the agent's packages bring their own) and then, per duel, forks a fresh agent
# process (which, after the referee's go byte, adds the agent's packages and imports player.py like a cold
# harness does) and afterwards kills every other process of the container and empties every folder an agent
# can write. Nothing of the agent's ever runs in the factory: it started as ``python3 -I`` (no PYTHONPATH, no
# site hooks of the agent's packages). Being PID 1 protects it: the kernel delivers no signal from inside the
# container to a namespace's init unless it handles that signal (it handles only SIGCHLD, a no-op), and
# ``kill(-1)`` skips it. It is not dumpable, so an agent of the same uid cannot ptrace it or read its memory.
# The referee talks to it over a SOCK_SEQPACKET control socket (one JSON object per packet; the duel's channel
# and stderr pipe arrive as descriptors with ``spawn``).

#: Folders an agent can write to in its container; each is emptied after every duel (``/arena-data``, the
#: agent's persistent data folder, is read back by the referee first and filled again for the next duel).
WRITABLE_DIRS = ("/tmp", "/dev/shm", "/dev/mqueue", "/arena-data")  # noqa: S108 - the container's own
#: System V IPC objects outlive their creator; any left after a duel makes the container unclean.
SYSV_IPC_FILES = ("/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem")
#: How long the end-of-duel clean-up may take before the container is declared unclean.
REAP_PATIENCE_S = 2.0
_PR_GET_DUMPABLE = 3
_PR_SET_DUMPABLE = 4


def _prctl(option: int, value: int = 0) -> int:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(option, value, 0, 0, 0))


def _oom_kills() -> int:
    """How many processes the kernel OOM-killed in this container's memory cgroup so far (-1: unknown)."""
    for path in ("/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events"):
        try:
            with open(path) as handle:
                for line in handle:
                    name, _, value = line.partition(" ")
                    if name == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            continue
    return -1


def _other_pids() -> list[int]:
    """Every process of the container but this one (PID 1)."""
    return [int(name) for name in os.listdir("/proc") if name.isdigit() and int(name) != os.getpid()]


def _wipe(path: str) -> None:
    """Delete ``path`` whatever its modes (every file in the container belongs to the agent's uid);
    failures are found by the caller, which checks that the folder is empty."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, 0o700)
            for name in os.listdir(path):
                _wipe(os.path.join(path, name))
            os.rmdir(path)
        else:
            os.unlink(path)
    except (OSError, RecursionError):
        pass


class WarmFactory:
    """PID 1 of a warm container: forks one agent process per duel and cleans up after it."""

    def __init__(self, agent_dir: str, control: socket.socket, packages: str = PACKAGES_DIR) -> None:
        self.agent_dir = agent_dir
        self.packages = packages
        self.control = control
        self.child = 0  # the current duel's agent process (0: none)
        self.status: int | None = None  # its exit code, negative for a signal
        self.oom_before = 0
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)

    def _drain_wakeups(self) -> None:
        try:
            while os.read(self.wake_r, 4096):
                pass
        except BlockingIOError:
            pass

    def reap(self) -> None:
        """Collect every exited child (orphans come to PID 1); remember the agent's exit code."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.child and self.status is None:
                self.status = os.waitstatus_to_exitcode(status)

    def serve(self) -> int:
        """Answer the referee until it closes the control socket (then the container ends)."""
        while True:
            readable, _, _ = select.select([self.control, self.wake_r], [], [])
            if self.wake_r in readable:
                self._drain_wakeups()
                self.reap()
            if self.control not in readable:
                continue
            data, fds, _, _ = socket.recv_fds(self.control, 65536, 2)
            if not data:
                return 0
            try:
                reply = self.handle(json.loads(data), fds)
            except Exception as exc:
                for fd in fds:
                    os.close(fd)
                reply = {"type": "failed", "message": f"{type(exc).__name__}: {exc}"}
            self.control.sendall(_dumps(reply).encode())

    def handle(self, msg: dict, fds: list[int]) -> dict:
        kind = msg.get("type")
        if kind == "spawn":
            return self.spawn(msg, fds)
        if kind == "poll":
            self.reap()
            return self.exit_reply()
        if kind == "wait":
            deadline = time.monotonic() + float(msg.get("timeout", 0))
            while True:
                self.reap()
                left = deadline - time.monotonic()
                if self.status is not None or left <= 0:
                    return self.exit_reply()
                select.select([self.wake_r], [], [], left)
                self._drain_wakeups()
        if kind == "pin":
            return {"type": "pinned", "ok": self.pin(set(msg["cpus"]))}
        if kind == "reap":
            problem = self.clean()
            reply = {**self.exit_reply(), "type": "reaped", "clean": not problem, "problem": problem}
            self.child, self.status = 0, None
            return reply
        raise ProtocolError(f"unknown request {kind!r}")

    def exit_reply(self) -> dict:
        oom = _oom_kills()
        return {"type": "exit", "status": self.status, "oom": oom > self.oom_before >= 0}

    def spawn(self, msg: dict, fds: list[int]) -> dict:
        if self.child or len(fds) != 2:
            raise ProtocolError("spawn needs two descriptors and no agent running")
        self.status = None
        self.oom_before = _oom_kills()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = self.agent_process(msg, fds)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:
                traceback.print_exc()
            finally:
                try:
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        for fd in fds:
            os.close(fd)
        self.child = pid
        return {"type": "spawned", "pid": pid}

    def agent_process(self, msg: dict, fds: list[int]) -> int:
        """In the forked child: become a fresh agent process for one duel, then serve it."""
        channel_fd, stderr_fd = fds
        signal.set_wakeup_fd(-1)
        os.close(self.wake_r)
        os.close(self.wake_w)
        self.control.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.setsid()
        _prctl(_PR_SET_DUMPABLE, 1)  # as a cold agent process is (its own /proc files, core limits apply)
        try:
            with open("/proc/self/oom_score_adj", "w") as handle:
                handle.write("1000")  # the agent, never the factory, is the OOM killer's choice
        except OSError:
            pass
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(stderr_fd, 1)
        os.dup2(stderr_fd, 2)
        os.close(stderr_fd)
        sys.stdout = sys.stderr
        os.environ.update({str(k): str(v) for k, v in (msg.get("env") or {}).items()})
        random.seed()  # fresh entropy per duel (numpy's global generator is not reseeded by fork)
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.random.seed()
        sock = socket.socket(fileno=channel_fd)
        if sock.recv(1) != b"\n":  # the referee placed this process and filled its data folder: go
            return 1
        return run_agent(Transport(sock.fileno(), sock.fileno(), sock), self.agent_dir, self.packages)

    def pin(self, cpus: set[int]) -> bool:
        """Set the affinity of every thread of every agent process (placement, as a cpuset would)."""
        ok = True
        for pid in _other_pids():
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                try:
                    os.sched_setaffinity(int(tid), cpus)
                except ProcessLookupError:
                    pass
                except OSError:
                    ok = False
        return ok

    def clean(self) -> str:
        """Kill every other process of the container, empty the writable folders, check System V IPC.
        Returns "" when the container is as it was before the duel, else what is left."""
        deadline = time.monotonic() + REAP_PATIENCE_S
        while True:
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)  # every process we may signal but ourselves (PID 1)
            self.reap()
            left = _other_pids()
            if not left:
                break
            if time.monotonic() > deadline:
                return f"processes survived the duel: {left[:10]}"
            time.sleep(0.002)
        problems = []
        for folder in WRITABLE_DIRS:
            if not os.path.isdir(folder):
                continue
            if os.stat(folder).st_uid == os.getuid():
                os.chmod(folder, 0o700)  # the agent owns the data folder and may have locked it
            try:
                for name in os.listdir(folder):
                    _wipe(os.path.join(folder, name))
                if os.listdir(folder):
                    problems.append(f"{folder} could not be emptied")
            except OSError as exc:
                problems.append(f"{folder} could not be emptied: {exc}")
        for path in SYSV_IPC_FILES:
            try:
                with open(path) as handle:
                    if len(handle.read().splitlines()) > 1:
                        problems.append(f"System V IPC objects left ({path})")
            except OSError:
                pass
        return "; ".join(problems)


def _connect_control(path: str) -> socket.socket:
    deadline = time.monotonic() + CONNECT_RETRY_S
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            sock.connect(path)
            return sock
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def warm_main(agent_dir: str, control_path: str, packages: str = PACKAGES_DIR) -> int:
    """Serve as a warm container's PID 1 (refuses anywhere else: ``kill(-1)`` would reach too far).

    The factory never imports anything of the agent's: its packages join the path only in each forked
    agent process. numpy is imported here, once for every duel, only when those packages do not bring a
    numpy of their own (which the agent's process then imports itself)."""
    if os.getpid() != 1:
        print("arena_harness: --warm runs only as a container's first process", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _prctl(_PR_SET_DUMPABLE, 0)
    if _prctl(_PR_GET_DUMPABLE) != 0:
        print("arena_harness: could not make the factory undumpable", file=sys.stderr)
        return 2
    control = _connect_control(control_path)
    if not ships_numpy(packages):
        importlib.import_module("numpy")
    import gc

    gc.collect()
    gc.freeze()  # keep the factory's objects out of the children's collections (fewer copied pages)
    control.sendall(b'{"type":"warm"}')
    return WarmFactory(agent_dir, control, packages).serve()


def run_agent(transport: Transport, agent_dir: str, packages: str = PACKAGES_DIR) -> int:
    """In the agent's process, its seat ready: add its packages, load the player, say ``ready`` and
    serve; the exit code of the agent process."""
    try:
        add_packages(packages)
        player = load_player(agent_dir)
    except Exception as exc:
        transport.write(_error_message(exc))
        traceback.print_exc()
        return 1
    transport.write(_READY)
    return serve(transport, player)


def main(argv: list[str] | None = None) -> int:
    """Entry point: parse arguments, set up the transport, load the player, serve."""
    parser = argparse.ArgumentParser(description="RL Arena agent harness")
    parser.add_argument("--agent-dir", required=True, help="folder holding player.py")
    parser.add_argument(
        "--packages", default=PACKAGES_DIR, help="the agent's packages (added once its seat is ready)"
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--connect", help="Unix socket of the referee (default: stdin/stdout)")
    group.add_argument("--warm", help="serve as a warm container's process factory on this control socket")
    args = parser.parse_args(argv)
    if args.warm:
        return warm_main(args.agent_dir, args.warm, args.packages)
    transport = _socket_transport(args.connect) if args.connect else _stdio_transport()
    return run_agent(transport, args.agent_dir, args.packages)


if __name__ == "__main__":
    sys.exit(main())
