"""NO ISOLATION: runs the harness loop in a thread of the referee's own process, over a socketpair.

For benchmarks and referee tests only: the agent's code runs with the referee's privileges, shares its
memory, cannot be killed (a stuck thread stays until the process exits) and prints on the referee's
stdout. It is deliberately absent from ``run_duel.api.SANDBOXES``, so settings and the CLI cannot
select it.
"""

from __future__ import annotations

import importlib.util
import itertools
import socket
import threading
from pathlib import Path

from run_duel.channel import Channel
from run_duel.harness import arena_harness
from run_duel.sandbox.base import AgentProcess, ExitInfo, LaunchSpec, Sandbox, SandboxError

_counter = itertools.count()


def _load_player(agent_dir: Path) -> object:
    """Import ``player.py`` under a unique module name (two agents may share a process)."""
    name = f"_arena_inprocess_player_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, agent_dir / "player.py")
    if spec is None or spec.loader is None:
        raise SandboxError(f"cannot import {agent_dir / 'player.py'}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Player(False)


class InProcessAgent(AgentProcess):
    """A harness thread; ``kill`` closes the channel, which ends the thread at its next read."""

    def __init__(self, agent_dir: Path) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._theirs = theirs
        fd = ours.detach()  # the Channel owns (and closes) our end
        self.channel = Channel(fd, fd)
        self._returncode: int | None = None
        self._thread = threading.Thread(
            target=self._run, args=(agent_dir,), daemon=True, name="inprocess-agent"
        )
        self._thread.start()

    def _run(self, agent_dir: Path) -> None:
        transport = arena_harness.Transport(self._theirs.fileno(), self._theirs.fileno(), self._theirs)
        try:
            try:
                player = _load_player(agent_dir)
            except Exception as exc:
                transport.write(arena_harness._error_message(exc))
                self._returncode = 1
                return
            transport.write(b'{"type":"ready"}\n')
            self._returncode = arena_harness.serve(transport, player)
        except OSError:
            self._returncode = 1
        finally:
            self._theirs.close()

    def poll_exit(self) -> ExitInfo | None:
        """Exit information once the thread has finished."""
        return None if self._thread.is_alive() else ExitInfo(returncode=self._returncode)

    def wait_exit(self, timeout: float) -> ExitInfo | None:
        """Wait for the thread to finish."""
        self._thread.join(timeout)
        return self.poll_exit()

    def stderr_log(self) -> str:
        """Nothing is captured in-process."""
        return ""

    def kill(self) -> None:
        """Close our end: the thread sees end of input and returns (unless it is stuck in user code)."""
        self.channel.close()
        self._thread.join(0.5)


class InProcessSandbox(Sandbox):
    """Runs agents as threads of this process. No isolation: benchmarks and tests only."""

    name = "inprocess"
    isolation = "NONE: the agent runs as a thread inside the referee's process (benchmarks and tests only)"

    def launch(self, spec: LaunchSpec) -> InProcessAgent:
        """Start a harness thread on ``spec.agent``."""
        agent_dir = Path(spec.agent)
        if not (agent_dir / "player.py").is_file():
            raise SandboxError(f"no player.py in {spec.agent!r}")
        return InProcessAgent(agent_dir)
