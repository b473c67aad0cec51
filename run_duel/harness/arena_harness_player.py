"""The agent's own process: its packages added, its player loaded (native, Kaggle-style or rl-arena) and
served message by message."""

from __future__ import annotations

import importlib
import json
import json.scanner
import os
import random
import sys
import traceback
from typing import Any

try:  # part of run_duel (the in-process sandbox, tests)
    from . import arena_harness_kaggle
except ImportError:  # run as a script: ``arena_harness.py`` loaded it already (by path)
    import arena_harness_kaggle  # type: ignore[no-redef]
try:  # part of run_duel (the in-process sandbox, tests)
    from . import arena_harness_protocol
except ImportError:  # run as a script: ``arena_harness.py`` loaded it already (by path)
    import arena_harness_protocol  # type: ignore[no-redef]
try:  # part of run_duel (the in-process sandbox, tests)
    from . import arena_harness_rl_arena
except ImportError:  # run as a script: ``arena_harness.py`` loaded it already (by path)
    import arena_harness_rl_arena  # type: ignore[no-redef]

KaggleAdapter = arena_harness_kaggle.KaggleAdapter
kaggle_agent = arena_harness_kaggle.kaggle_agent
rl_arena_player = arena_harness_rl_arena.rl_arena_player
ProtocolError = arena_harness_protocol.ProtocolError
Transport = arena_harness_protocol.Transport
encode_action = arena_harness_protocol.encode_action
error_message = arena_harness_protocol.error_message

#: Where our image build installs the agent's ``requirements.txt`` (never on ``PYTHONPATH`` at start-up).
PACKAGES_DIR = "/opt/agent-packages"
#: Environment variables through which the platform tells the harness the agent's format and the game.
FORMAT_ENV = "ARENA_AGENT_FORMAT"
GAME_ENV = "ARENA_GAME"


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


def message_handler(player: Any) -> Any:
    """The function answering one message line of the referee for ``player``: it returns the reply's
    bytes, or ``None`` for ``close``. A user exception becomes an ``error`` reply; a line that is not a
    JSON object raises (the harness cannot go on)."""
    import numpy as np

    asarray = np.asarray
    int64 = np.int64
    # The referee's lines: one JSON object each, no leading whitespace; read by the decoder's scanner
    # itself (the C one when there is one), without ``json.loads``'s encoding detection and checks.
    scan = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]
    ended = arena_harness_protocol.ENDED
    set_clock = player.set_clock if isinstance(player, KaggleAdapter) else None

    def handle(line: bytes) -> bytes | None:
        msg = scan(line.decode(), 0)[0]
        kind = msg.get("type")
        try:
            if set_clock is not None and kind in ("start", "step"):
                set_clock(msg)
            if kind == "step":
                return encode_action(
                    player.step(
                        asarray(msg["state"]), asarray(msg["valid_actions"], dtype=int64), msg["reward"]
                    )
                )
            if kind == "start":
                return encode_action(
                    player.start(asarray(msg["state"]), asarray(msg["valid_actions"], dtype=int64))
                )
            if kind == "end":
                player.end(asarray(msg["state"]), msg["reward"])
                return ended
            if kind == "close":
                return None
            raise ProtocolError(f"unknown message type {kind!r}")
        except Exception as exc:
            return error_message(exc)

    return handle


def serve(transport: Transport, player: Any) -> int:
    """Answer the referee's messages until ``close`` or end of input. Returns the exit code."""
    handle = message_handler(player)
    readline = transport.readline
    write = transport.write
    while True:
        line = readline()
        if not line:
            return 0
        reply = handle(line)
        if reply is None:  # close
            transport.close()
            return 0
        write(reply)


def run_agent(transport: Transport, agent_dir: str, packages: str = PACKAGES_DIR) -> int:
    """In the agent's process, its seat ready: add its packages, load the player, say ``ready`` and
    serve; the exit code of the agent process."""
    try:
        add_packages(packages)
        player = load_player(agent_dir)
    except Exception as exc:
        transport.write(error_message(exc))
        traceback.print_exc()
        return 1
    transport.write(arena_harness_protocol.READY)
    return serve(transport, player)
