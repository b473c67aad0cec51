"""NO ISOLATION: runs the harness in the referee's own process.

For benchmarks and referee tests only: the agent's code runs with the referee's privileges, shares its
memory, cannot be killed and prints on the referee's stdout. It is deliberately absent from
``run_duel.api.SANDBOXES``, so settings and the CLI cannot select it.

Two ways (``InProcessSandbox(threaded=...)``):

* direct (the default): the harness's message handler (``arena_harness.message_handler``) is called in
  the referee's own thread when a message is sent, on the very bytes the referee encoded, and its reply
  bytes are what the referee reads and decodes. The whole protocol's encoding and decoding runs, with
  no transport: what the referee and the harness cost per move, nothing else. No deadline can be
  enforced (a stuck player blocks the referee).
* threaded: the harness loop in a thread over a socketpair, as before: deadlines hold (a stuck thread
  stays until the process exits), at the price of a thread switch per message.
"""

from __future__ import annotations

import importlib.util
import itertools
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from run_duel.channel import Channel, ChannelClosed, ChannelOverflow, ChannelTimeout
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


class DirectChannel(Channel):
    """A ``Channel`` whose other end is a harness message handler called in this thread: ``send`` encodes
    the message as ``Channel.send`` does and hands the line to the handler, whose reply bytes wait in the
    buffer for ``recv``, which decodes them as ``Channel.recv`` does (byte cap included). No descriptor,
    no deadline."""

    def __init__(self) -> None:  # no descriptors: nothing of Channel.__init__ applies
        self._buffer = bytearray()
        self._closed = False
        self.handle: Any = None  # bytes -> bytes | None (None: the harness closed its end)

    def send(
        self, message: dict[str, Any], timeout: float, before_wait: Callable[[], object] | None = None
    ) -> None:
        if self._closed or self.handle is None:
            raise ChannelClosed("the agent closed its end of the channel")
        try:
            reply = self.handle(orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE))
        except Exception as exc:  # the harness itself failed: as its process would have died
            self._closed = True
            raise ChannelClosed(f"the harness failed: {type(exc).__name__}: {exc}") from exc
        if reply is None:  # close
            self.handle = None
        else:
            self._buffer += reply

    def recv(self, timeout: float, max_bytes: int) -> dict[str, Any]:
        buffer = self._buffer
        newline = buffer.find(b"\n")
        if newline < 0:
            if len(buffer) > max_bytes:
                raise ChannelOverflow(f"reply longer than {max_bytes} bytes without a newline")
            if self._closed or self.handle is None:
                raise ChannelClosed("the agent closed the channel (exited or crashed)")
            raise ChannelTimeout(f"no complete reply within {timeout:g} s")  # nothing was asked
        return self._take_line(buffer, newline, max_bytes)

    def wait_closed(self, timeout: float, max_bytes: int = 65536) -> bool:
        return self._closed or self.handle is None

    def close(self) -> None:
        self._closed = True
        self.handle = None


class DirectAgent(AgentProcess):
    """The harness's message handler of a Player loaded in this process, behind a ``DirectChannel``."""

    def __init__(self, agent_dir: Path) -> None:
        self.channel = self._direct = DirectChannel()
        self._returncode: int | None = None
        try:
            player = _load_player(agent_dir)
        except Exception as exc:
            self._direct._buffer += arena_harness._error_message(exc)
            self._direct._closed = True
            self._returncode = 1
            return
        self._direct._buffer += b'{"type":"ready"}\n'
        self._direct.handle = arena_harness.message_handler(player)

    def poll_exit(self) -> ExitInfo | None:
        """Exit information once the harness closed its end (``close``, a failure)."""
        if self._direct.handle is not None:
            return None
        return ExitInfo(returncode=self._returncode if self._returncode is not None else 0)

    def wait_exit(self, timeout: float) -> ExitInfo | None:
        return self.poll_exit()

    def stderr_log(self) -> str:
        """Nothing is captured in-process."""
        return ""

    def kill(self) -> None:
        self.channel.close()


class InProcessSandbox(Sandbox):
    """Runs agents in this process (direct calls, or a thread each). No isolation: benchmarks and tests."""

    name = "inprocess"
    isolation = "NONE: the agent runs inside the referee's process (benchmarks and tests only)"

    def __init__(self, *, threaded: bool = False) -> None:
        self.threaded = threaded

    def launch(self, spec: LaunchSpec) -> AgentProcess:
        """Load ``spec.agent``'s Player behind a direct channel, or start a harness thread on it."""
        agent_dir = Path(spec.agent)
        if not (agent_dir / "player.py").is_file():
            raise SandboxError(f"no player.py in {spec.agent!r}")
        return InProcessAgent(agent_dir) if self.threaded else DirectAgent(agent_dir)
