"""One seat's agent: the agent protocol as the platform speaks it, in duels, smoke tests and live games.

A ``Seat`` launches its agent in a sandbox, waits for ``ready``, asks for moves and tells it when a match
ends, with the game's deadlines and byte caps, and turns everything that goes wrong into a
``PlayerFault`` whose ``kind`` is the same whoever drives the seat (the referee or a live game):

=====================================================  ================  =================
what happened                                          kind              channel still ok?
=====================================================  ================  =================
no complete reply in time                              TIMEOUT           no
  ... while the agent's memory cgroup ran out          MEMORY_LIMIT      no
the channel closed / the process died                  CRASH             no
  ... killed by the kernel's OOM killer                MEMORY_LIMIT      no
  ... killed for its CPU-seconds limit                 TIMEOUT           no
the user's code raised (harness ``error``)             CRASH             yes
  ... ``MemoryError``                                  MEMORY_LIMIT      yes
a reply line longer than ``max_message_bytes``         OUTPUT_LIMIT      no
not UTF-8 / JSON / an object / the expected message    BAD_OUTPUT        no
not an int, or not among the legal actions             INVALID_ACTION    yes
its data folder cannot be filled from what it saved    CRASH             (never started)
=====================================================  ================  =================

Fairness: between its own replies the agent is *frozen* (``AgentProcess.freeze``: its cgroup, every
process it forked included, gets no CPU), so it cannot slow its opponent down, whose clock runs. It is
thawed just before a message that needs a reply is sent and frozen again once the reply is in. Start-up
(``ready``) runs unfrozen, both agents in parallel.

Time bank (Kaggle's overage): each match gives the agent ``Limits.time_bank_s`` seconds on top of the
per-reply limit. A reply slower than ``move_timeout`` draws its excess from the bank, measured on the same
clock as the deadline (the agent's own time); a reply that would need more than the bank holds is a
TIMEOUT. ``start`` and ``step`` tell the agent what is left (``time_bank``; ``start`` also gives
``move_timeout``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from time import perf_counter_ns
from typing import Any

from run_duel.channel import ChannelError, ChannelTimeout
from run_duel.outcomes import ErrorKind
from run_duel.sandbox.base import AgentDataRefused, AgentProcess, LaunchSpec, Sandbox
from run_duel.sandbox.cgroups import CpuUsage

log = logging.getLogger(__name__)

#: Characters of an agent's stderr quoted in an error message, and at most this many lines.
ERROR_LOG_CHARS = 2000
ERROR_LOG_LINES = 20
#: After a missed deadline, an agent still filling its memory is watched this long for reaching its
#: memory limit (then the fault is MEMORY_LIMIT, not TIMEOUT; ``AgentProcess.memory_exhausted``).
MEMORY_GRACE_S = 1.0
#: A move's deadline moves by the time the machine kept the agent waiting for a CPU (``Seat._receive``);
#: a backstop bounds a move at this many times the limit however overloaded the machine is.
MAX_WALL_FACTOR = 30.0


class PlayerFault(Exception):
    """The agent broke a rule; ``kind`` is one of ``PLAYER_ERROR_KINDS``. ``desync``: its channel can no
    longer be trusted (the process must be killed)."""

    def __init__(self, kind: str, message: str, *, desync: bool) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.desync = desync


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "..." + text[-limit:]


def ordinal_move(n: int) -> str:
    """Where a fault happened, in the erring player's own moves first: ``n`` is the index of the ply
    (both players' moves counted), e.g. 4 -> "its move 3 (move 5 of the match)"."""
    return f"its move {n // 2 + 1} (move {n + 1} of the match)"


def as_action(value: object) -> object:
    """An action as the rules take it: a JSON number equal to a whole number becomes that ``int``
    (agents written to the rl-arena document return floats such as ``3.0``); anything else is unchanged
    (``True`` stays a bool: JSON ``true`` is not an action)."""
    if type(value) is float and value.is_integer():
        return int(value)
    return value


def json_preview(value: Any) -> str:
    """A short printable form of a JSON value."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


#: A reading of an agent's clock as the kernel gave it (``_AgentClock.sample``: its two files' bytes).
_ClockSample = tuple[bytes | None, bytes]


class _AgentClock:
    """Reads, through open files, the CPU seconds of the agent's cgroup and the seconds its harness's
    main thread spent runnable but not running (``/proc/<pid>/schedstat``, second field)."""

    def __init__(self, cpu: CpuUsage, schedstat_fd: int) -> None:
        self._cpu = cpu
        self._fd = schedstat_fd

    @classmethod
    def open(cls, proc: AgentProcess) -> _AgentClock | None:
        pid = proc.harness_pid()
        if pid <= 0:
            return None
        cpu = proc.cpu_usage()
        if cpu is None:
            return None
        try:
            fd = os.open(f"/proc/{pid}/schedstat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            cpu.close()
            return None
        return cls(cpu, fd)

    def sample(self) -> _ClockSample | None:
        """The clock now, as read: both files' bytes, parsed by ``since`` only if a reply is late (the
        seat samples before every reply). ``None`` once gone."""
        cpu = self._cpu.raw()
        try:
            return cpu, os.pread(self._fd, 256, 0)
        except OSError:
            return None

    def read(self) -> tuple[float, float] | None:
        """(CPU seconds of the agent, run-queue seconds of its harness) so far; ``None`` once gone."""
        return self._parse(self.sample())

    def _parse(self, sample: _ClockSample | None) -> tuple[float, float] | None:
        if sample is None:
            return None
        cpu = self._cpu.parse(sample[0])
        if cpu is None:
            return None
        try:
            return cpu, int(sample[1].split()[1]) / 1e9
        except (ValueError, IndexError):
            return None

    def since(self, start: _ClockSample) -> tuple[float, float] | None:
        """(CPU seconds, run-queue seconds) from the sample ``start`` to now; ``None`` if either reading
        is missing (the agent is gone)."""
        before, now = self._parse(start), self.read()
        if before is None or now is None:
            return None
        return now[0] - before[0], now[1] - before[1]

    def close(self) -> None:
        self._cpu.close()
        with contextlib.suppress(OSError):
            os.close(self._fd)


_unfreezable: set[str] = set()


def _warn_unfrozen(sandbox: Sandbox) -> None:
    """Say once per process and sandbox kind that its agents cannot be frozen here."""
    name = getattr(sandbox, "name", type(sandbox).__name__)
    if name not in _unfreezable:
        _unfreezable.add(name)
        log.warning(
            "agents of the %s sandbox cannot be frozen between their moves here (no writable freezer "
            "cgroup): a waiting agent can take CPU from the one whose clock runs",
            name,
        )


def _raised_kind(reply: dict[str, Any]) -> ErrorKind:
    return ErrorKind.MEMORY_LIMIT if reply.get("exception") == "MemoryError" else ErrorKind.CRASH


class Seat:
    """One seat's agent across a duel (or a live game): launches, protocol, faults, logs, freezing."""

    def __init__(self, index: int, sandbox: Sandbox, spec: LaunchSpec, *, name: str | None = None) -> None:
        self.index = index
        self.name = name or f"PLAYER_{index + 1}"
        self.sandbox = sandbox
        self.spec = spec
        self.limits = spec.limits
        self.proc: AgentProcess | None = None
        self.launches = 0
        self.logs: list[str] = []
        self.fatal: PlayerFault | None = None  # every remaining match is charged with this
        self.started = False  # got "start" in the current match
        self._set_bank(self.limits.time_bank_s)
        self._clock: _AgentClock | None = None

    def _close_clock(self) -> None:
        if self._clock is not None:
            self._clock.close()
            self._clock = None

    @property
    def relaunches(self) -> int:
        return max(0, self.launches - 1)

    # -- life cycle ----------------------------------------------------------------------------------

    def spawn(self) -> None:
        """Start the process (raises ``SandboxError``); ``await_ready`` finishes the launch. A data
        folder that cannot be filled from what the agent saved makes the seat ``fatal`` instead."""
        try:
            self.attach(self.sandbox.launch(self.spec))
        except AgentDataRefused as exc:
            self.refuse_data(exc)

    def refuse_data(self, exc: AgentDataRefused) -> None:
        """The agent's data folder could not be filled because of its own content (``AgentDataRefused``):
        charged to the agent for every remaining match (CRASH: it could not start), and the folder is
        reset (``AgentData.refused``; the platform stores the empty folder and notes why)."""
        data = self.spec.data
        self.fatal = PlayerFault(
            ErrorKind.CRASH,
            f"{self.name} could not start: its data folder could not be restored from what it saved "
            f"({exc}); the folder is emptied for its next duel",
            desync=True,
        )
        if data is not None:
            data.refused = True
            data.saved = b""  # an empty folder
            data.problem = (
                f"the folder could not be restored at the start of a duel ({exc}), so the agent could not "
                "play it and the folder was emptied"
            )

    def attach(self, proc: AgentProcess) -> None:
        """Take a process launched for this seat (e.g. by ``Sandbox.launch_many``)."""
        self.launches += 1
        self.proc = proc
        self._close_clock()

    def await_ready(self) -> None:
        """Wait for ``ready``, then freeze the agent until its first turn. On failure the seat is marked
        ``fatal`` (charged for every remaining match) and its process discarded."""
        if self.proc is None and self.fatal is not None:
            return  # it never started (``refuse_data``)
        assert self.proc is not None
        try:
            reply = self.proc.channel.recv(self.limits.init_timeout, self.limits.max_message_bytes)
        except ChannelError as exc:
            fault = self.fault_from_channel(exc, "while starting (importing player.py and building Player)")
            self.fatal = PlayerFault(fault.kind, fault.message, desync=True)
            self.discard()
            return
        if reply.get("type") == "ready":
            if not self.proc.freeze():
                _warn_unfrozen(self.sandbox)
            self._clock = _AgentClock.open(self.proc)
            return
        if reply.get("type") == "error":
            name = reply.get("exception")
            kind = _raised_kind(reply)
            message = f"{self.name} failed to start: player.py raised {name}:\n{reply.get('message', '')}"
        else:
            kind = ErrorKind.BAD_OUTPUT
            message = f"{self.name} sent {str(reply)[:200]} instead of ready while starting"
        self.discard()
        self.fatal = PlayerFault(kind, self.with_log(message), desync=True)

    def discard(self) -> None:
        """Kill the process, then keep its stderr tail (complete once it is dead: the local sandbox drains
        the pipe and the Docker sandbox fetches the log as part of ``kill``)."""
        self._close_clock()
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        proc.kill()
        text = proc.stderr_log()
        if text:
            self.logs.append(text)

    def say_close(self) -> None:
        """Send ``close`` (the harness closes its channel and exits); a broken channel is ignored."""
        if self.proc is None:
            return
        self.proc.thaw()  # it must run to obey
        with contextlib.suppress(ChannelError):
            self.proc.channel.send({"type": "close"}, 0.1)

    # -- protocol ------------------------------------------------------------------------------------

    def _exchange(self, message: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """Send ``message``, thaw, read the reply within the move deadline, freeze. Returns the reply and
        the nanoseconds from sending to the reply. Raises ``ChannelError`` (the agent is left thawed: what
        happens next, a kill or a look at how it ended, needs it running).

        The message is written while the agent is still frozen and the agent thawed right after (at once
        if the write has to wait for the agent to read): thawed, it finds the message waiting instead of
        being woken twice (once by the thaw, once by the message). Its clock is read before the thaw
        (frozen, it cannot have moved); the readings are parsed only if the reply is late."""
        proc = self.proc
        assert proc is not None
        limits = self.limits
        clock = self._clock
        start = clock.sample() if clock is not None else None
        channel = proc.channel
        t0 = perf_counter_ns()
        try:
            channel.send(message, limits.move_timeout, proc.thaw)
        finally:
            proc.thaw()
        try:
            reply = channel.recv(limits.move_timeout + self.bank, limits.max_message_bytes)
        except ChannelTimeout as exc:
            reply = self._receive(t0, start, late=exc)
        elapsed_ns = perf_counter_ns() - t0
        proc.freeze()
        if elapsed_ns > limits.move_timeout * 1e9 and self.bank > 0:
            self._draw_bank(elapsed_ns / 1e9, start)
        return reply, elapsed_ns

    def _draw_bank(self, elapsed: float, start: _ClockSample | None) -> None:
        """Take a slow reply's excess over ``move_timeout`` from the time bank, on the clock the deadline
        uses: the agent's own time, the larger of its wall time less its run-queue wait and its CPU
        seconds (plain wall time where the agent's clock cannot be read)."""
        own = elapsed
        used = self._clock.since(start) if self._clock is not None and start is not None else None
        if used is not None:
            own = max(elapsed - used[1], used[0])
        self._set_bank(max(0.0, self.bank - max(0.0, own - self.limits.move_timeout)))

    def _set_bank(self, seconds: float) -> None:
        """``bank``: the seconds left in this match's time bank; ``_bank_sent``: as the messages say it,
        rounded here, when it changes (a match's start, a draw), not at every move."""
        self.bank = seconds
        self._bank_sent = round(seconds, 3)

    def _receive(
        self, t0: int, start: _ClockSample | None, late: ChannelTimeout | None = None
    ) -> dict[str, Any]:
        """The reply, within the move limit plus the time the machine kept the agent from running.

        The agent's clock runs while it runs or sleeps, not while it waits for a CPU: at the deadline, if
        the agent (all its processes) used less CPU than the limit during the move while its harness
        waited for a CPU (its run-queue delay, ``/proc/<pid>/schedstat``), the deadline moves by that
        wait (at most to ``MAX_WALL_FACTOR`` times the limit): a loaded host is not the agent's fault. An
        agent that sleeps, or burns its own CPU budget (other threads or processes included), gets
        nothing more. The limit is ``move_timeout`` plus what is left in the match's time bank.
        ``late``: how a first read with that limit already timed out (``_exchange`` reads once itself);
        ``t0``: ``perf_counter_ns()`` when the message was sent."""
        proc = self.proc
        assert proc is not None
        limits = self.limits
        limit = timeout = limits.move_timeout + self.bank
        while True:
            try:
                if late is not None:
                    first, late = late, None
                    raise first
                return proc.channel.recv(timeout, limits.max_message_bytes)
            except ChannelTimeout:
                used = self._clock.since(start) if self._clock is not None and start is not None else None
                if used is None:
                    raise
                elapsed = (perf_counter_ns() - t0) / 1e9
                cpu, waited = used
                budget = min(limit + waited, MAX_WALL_FACTOR * limit)
                timeout = budget - elapsed
                if cpu >= limit or timeout <= 0.001:
                    banked = f" ({limits.move_timeout:g} s + {self.bank:.2f} s left in its time bank)"
                    if waited <= 0.001:
                        if self.bank <= 0:
                            raise
                        raise ChannelTimeout(f"no complete reply within {limit:.2f} s{banked}") from None
                    raise ChannelTimeout(
                        f"no complete reply within {limit:.2f} s of its own time"
                        f"{banked if self.bank > 0 else ''} (the move "
                        f"took {elapsed:.2f} s, {waited:.2f} s of it waiting for a CPU; "
                        f"{cpu:.2f} s of CPU)"
                    ) from None

    def move(self, observation: Any, legal: list[int], ply: int) -> tuple[int, float]:
        """Ask for the action at ply ``ply`` of the match (``start`` on the seat's first move, then
        ``step``). Returns the legal action and the seconds it took, to the microsecond (``round(s, 6)``
        of the nanoseconds, as the duel JSON's ``move_times`` keep them); raises ``PlayerFault``."""
        if self.started:
            message = {
                "type": "step",
                "state": observation,
                "valid_actions": legal,
                "reward": 0.0,
                "time_bank": self._bank_sent,
            }
        else:
            self._set_bank(self.limits.time_bank_s)  # a new match, a full bank
            message = {
                "type": "start",
                "state": observation,
                "valid_actions": legal,
                "move_timeout": self.limits.move_timeout,
                "time_bank": self._bank_sent,
            }
            self.started = True
        try:
            reply, elapsed_ns = self._exchange(message)
        except ChannelError as exc:
            raise self.fault_from_channel(exc, f"at {ordinal_move(ply)}") from exc
        action = reply.get("action") if reply.get("type") == "action" else None
        if type(action) is not int:
            action = as_action(action)
        if type(action) is not int or action not in legal:
            raise self._bad_reply(reply, legal, ply)
        return action, (elapsed_ns + 500) // 1000 / 1e6

    def end(self, observation: Any, reward: float) -> PlayerFault | None:
        """Tell the agent the match is over (only if it got ``start``); the fault if it misbehaved."""
        if not self.started or self.proc is None:
            return None
        self.started = False
        try:
            reply, _ = self._exchange({"type": "end", "state": observation, "reward": reward})
        except ChannelError as exc:
            return self.fault_from_channel(exc, "when told the match was over (end)")
        if reply.get("type") == "ended":
            return None
        if reply.get("type") == "error":
            name = reply.get("exception", "Exception")
            return PlayerFault(
                _raised_kind(reply),
                self.with_log(f"{self.name} raised {name} in end():\n{reply.get('message', '')}"),
                desync=False,
            )
        return PlayerFault(
            ErrorKind.BAD_OUTPUT,
            self.with_log(f"{self.name} sent {str(reply)[:200]} instead of ended"),
            desync=True,
        )

    # -- faults --------------------------------------------------------------------------------------

    def _bad_reply(self, reply: dict[str, Any], legal: list[int], ply: int) -> PlayerFault:
        where = ordinal_move(ply)
        kind = reply.get("type")
        if kind == "error":
            name = reply.get("exception", "Exception")
            text = str(reply.get("message", ""))
            return PlayerFault(
                _raised_kind(reply),
                self.with_log(f"{self.name} raised {name} at {where}:\n{text}"),
                desync=False,
            )
        if kind != "action" or "action" not in reply:
            return PlayerFault(
                ErrorKind.BAD_OUTPUT,
                self.with_log(f"{self.name} sent {str(reply)[:200]} instead of an action at {where}"),
                desync=True,
            )
        action = reply["action"]
        shown = ", ".join(map(str, legal[:30])) + (", ..." if len(legal) > 30 else "")
        if action is None and "repr" in reply:
            what = f"returned {str(reply['repr'])[:200]} at {where}, which is not a JSON value"
        elif type(action) is float:
            what = (
                f"returned {json_preview(action)} at {where}: a float that is not a whole number "
                "(return one of valid_actions, e.g. int(a))"
            )
        elif type(action) is not int:
            what = f"returned {json_preview(action)} ({type(action).__name__}) at {where}, not an int"
        else:
            what = f"played {json_preview(action)} at {where}, which is not a legal action"
        return PlayerFault(
            ErrorKind.INVALID_ACTION,
            self.with_log(f"{self.name} {what}; legal actions: [{shown}]"),
            desync=False,
        )

    def fault_from_channel(self, exc: ChannelError, where: str) -> PlayerFault:
        """Turn a channel failure into the player's fault, looking at how the process ended and at its
        memory cgroup (a deadline missed or a death at the memory limit is ``MEMORY_LIMIT``)."""
        kind = exc.kind
        message = str(exc)
        proc = self.proc
        if kind == ErrorKind.CRASH and proc is not None:
            info = proc.wait_exit(0.5)
            if info is None:
                message += " (process still running)"
            else:
                if info.returncode is not None and info.returncode < 0:
                    try:
                        signame = signal.Signals(-info.returncode).name
                    except ValueError:
                        signame = f"signal {-info.returncode}"
                    message = f"the process was killed by {signame}"
                elif info.returncode is not None:
                    message = f"the process exited with code {info.returncode}"
                if info.oom_killed:
                    kind = ErrorKind.MEMORY_LIMIT
                    message += f" after exceeding its memory limit of {self.limits.memory_mb} MB"
                elif info.returncode == -signal.SIGXCPU or "CPU time" in info.detail:
                    kind = ErrorKind.TIMEOUT
                if info.detail:
                    message += f" ({info.detail})"
        if kind in (ErrorKind.TIMEOUT, ErrorKind.CRASH) and proc is not None:
            exhausted = proc.memory_exhausted(MEMORY_GRACE_S if kind == ErrorKind.TIMEOUT else 0.0)
            if exhausted:
                kind = ErrorKind.MEMORY_LIMIT
                message += f"; {exhausted} ({self.limits.memory_mb} MB)"
        if kind == "PROTOCOL":
            kind = ErrorKind.BAD_OUTPUT
        return PlayerFault(kind, self.with_log(f"{self.name} {where}: {message}"), desync=True)

    # -- logs ----------------------------------------------------------------------------------------

    def stderr_tail(self) -> str:
        """Everything kept of the agent's stderr across its launches."""
        parts = list(self.logs)
        if self.proc is not None:
            parts.append(self.proc.stderr_log())
        return "\n--- relaunched ---\n".join(p for p in parts if p)

    def with_log(self, message: str) -> str:
        """``message`` followed by the last lines of the agent's stderr."""
        lines = self.stderr_tail().rstrip().splitlines()[-ERROR_LOG_LINES:]
        tail = _tail(
            "\n".join(line if len(line) <= 200 else line[:200] + "..." for line in lines), ERROR_LOG_CHARS
        )
        return f"{message}\nLast lines of stderr:\n{tail}" if tail else f"{message}\n(stderr was empty)"
