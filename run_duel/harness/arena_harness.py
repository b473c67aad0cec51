"""RL Arena agent harness: imports the user's ``player.py`` and serves the referee's NDJSON protocol.

This file and its siblings ``arena_harness_*.py`` (``run_duel.harness.PYTHON_HARNESS_FILES``) are copied
together into every agent image, so they are self-contained: standard library and numpy only, never
``run_duel``. Usage::

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
import os
import sys
import types

if __package__:  # imported as part of run_duel (the in-process sandbox, tests)
    from . import (
        arena_harness_kaggle,
        arena_harness_player,
        arena_harness_protocol,
        arena_harness_rl_arena,
        arena_harness_warm,
    )
else:  # run as a script: its modules are the files next to it, loaded by path, dependencies first
    import importlib.util

    def _load(name: str) -> types.ModuleType:
        """Load ``<name>.py`` from this file's folder as module ``name``. Not through ``sys.path``:
        ``-I`` leaves the folder off it, and the agent's user may be unable to list the folder (a
        container's launch folder is mode 0710), which a path search needs."""
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"the harness module {path} is missing")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # the modules loaded after it import it by this name
        spec.loader.exec_module(module)
        return module

    arena_harness_protocol = _load("arena_harness_protocol")
    arena_harness_kaggle = _load("arena_harness_kaggle")
    arena_harness_rl_arena = _load("arena_harness_rl_arena")
    arena_harness_player = _load("arena_harness_player")
    arena_harness_warm = _load("arena_harness_warm")

# What the in-process sandbox and the tests use, by the names they always had.
Transport = arena_harness_protocol.Transport
encode_action = arena_harness_protocol.encode_action
_error_message = arena_harness_protocol.error_message
KaggleAdapter = arena_harness_kaggle.KaggleAdapter
RL_ARENA_GAMES = arena_harness_rl_arena.RL_ARENA_GAMES
RlArenaAdapter = arena_harness_rl_arena.RlArenaAdapter
rl_arena_player = arena_harness_rl_arena.rl_arena_player
PACKAGES_DIR = arena_harness_player.PACKAGES_DIR
add_packages = arena_harness_player.add_packages
load_player = arena_harness_player.load_player
serve = arena_harness_player.serve
message_handler = arena_harness_player.message_handler
run_agent = arena_harness_player.run_agent
ships_numpy = arena_harness_player.ships_numpy
warm_main = arena_harness_warm.warm_main


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
    protocol = arena_harness_protocol
    transport = protocol.socket_transport(args.connect) if args.connect else protocol.stdio_transport()
    return run_agent(transport, args.agent_dir, args.packages)


if __name__ == "__main__":
    sys.exit(main())
