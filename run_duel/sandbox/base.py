"""One interface for every sandbox that runs an agent.

A sandbox starts one agent process (a subprocess, a container, ...) running *our* harness, which imports
the user's ``player.py`` and speaks the newline-delimited JSON protocol of ``run_duel/README.md`` over a
``Channel``. The referee only ever talks to ``AgentProcess``; it never knows which sandbox it has.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from run_duel.agent_data import AgentData
from run_duel.channel import Channel
from run_duel.sandbox.cgroups import CpuUsage
from run_duel.settings import run_duel_settings

#: How every sandbox (and our image's entrypoint) starts the Python harness: isolated (``-I``: no
#: ``PYTHONPATH``, no user site, not even the script's folder on ``sys.path``), so nothing an agent
#: brought (a package's ``sitecustomize.py`` or ``.pth`` file, a module shadowing one the harness imports)
#: runs before its seat is ready; the harness adds the agent's packages in the agent's own process then.
#: ``-B``: no bytecode written; ``-u``: unbuffered output (``-I`` ignores ``PYTHONUNBUFFERED``).
HARNESS_PYTHON_FLAGS = ("-I", "-B", "-u")

#: The files the harness imports, in order: ``player.py`` (class Player), else ``main.py``, else
#: ``submission.py`` (a Kaggle agent: the file's last function).
AGENT_ENTRY_FILES = ("player.py", "main.py", "submission.py")


def runtime_dir() -> Path:
    """The folder every referee on this host shares for per-launch socket folders and CPU-slot locks:
    ``$AGENT_RUNTIME_DIR``, else the system temp folder."""
    return run_duel_settings().runtime_dir


def has_agent_entry(folder: str | Path) -> bool:
    """True when ``folder`` holds a file the harness can import (``player.py`` or ``main.py``)."""
    return any((Path(folder) / name).is_file() for name in AGENT_ENTRY_FILES)


@dataclass(frozen=True)
class Limits:
    """Resource limits for one agent process. Times are seconds, sizes as named."""

    memory_mb: int = 512
    cpus: float = 1.0
    pids: int = 64
    file_size_mb: int = 64
    open_files: int = 256
    tmpfs_mb: int = 64
    data_mb: int = 0  # the persistent data folder's size (run_duel/agent_data.py); 0: no such folder
    cpu_time_s: int = 600  # total CPU seconds over the whole duel (local sandbox RLIMIT_CPU)
    log_bytes: int = 256 * 1024  # stderr kept per agent (the tail)
    max_message_bytes: int = 64 * 1024  # longest reply line accepted from the agent
    init_timeout: float = 10.0  # import player.py and construct Player
    move_timeout: float = 1.0  # each start/step/end reply
    time_bank_s: float = 0.0  # per match: a reply slower than move_timeout draws the excess from it


@dataclass(frozen=True)
class ExitInfo:
    """How an agent process ended."""

    returncode: int | None  # None if unknown; negative = killed by that signal (POSIX convention)
    oom_killed: bool = False
    detail: str = ""


@dataclass
class LaunchSpec:
    """What to run: ``agent`` is a directory holding ``player.py`` (local) or an image name (docker).

    With ``limits.data_mb`` > 0 the agent has a data folder of that size (``run_duel.agent_data``),
    filled with ``data.archive`` at every launch (empty when ``data`` is ``None``)."""

    agent: str
    limits: Limits = field(default_factory=Limits)
    labels: dict[str, str] = field(default_factory=dict)  # e.g. {"duel": "42", "seat": "1"}
    env: dict[str, str] = field(default_factory=dict)  # extra variables for the agent (never secrets)
    data: AgentData | None = None  # its persistent folder's content, and what the referee read back
    #: Which adapter the harness wraps the agent in (``run_duel.agent_formats``): ``native`` (our Player,
    #: or a Kaggle-style module, detected), ``kaggle`` or ``rl-arena`` (the original rl-arena's Player).
    agent_format: str = "native"
    game: str = ""  # the game's slug (``play_duel`` sets it): the rl-arena adapter converts for it

    def harness_env(self) -> dict[str, str]:
        """``env`` plus what the harness must know at launch: the agent's format and the game
        (``ARENA_AGENT_FORMAT``, ``ARENA_GAME``); every sandbox gives these to the agent's harness."""
        return {**self.env, "ARENA_AGENT_FORMAT": self.agent_format, "ARENA_GAME": self.game}


class SandboxError(RuntimeError):
    """Our side failed to start or manage a sandbox (infrastructure: never charged to a player)."""


class AgentDataRefused(Exception):
    """The agent's data folder could not be filled because of what its archive holds (a name twice, a
    file where a folder goes, more files than the folder's size takes...): the agent's own doing, never
    infrastructure. The seat charges it and empties the folder (``Seat.refuse_data``). ``spec`` is the
    launch it belongs to (``launch_many`` launches several)."""

    def __init__(self, message: str, spec: LaunchSpec) -> None:
        super().__init__(message)
        self.spec = spec


class AgentProcess(ABC):
    """A running agent. ``kill`` is idempotent and leaves no process, container or file behind."""

    channel: Channel

    @abstractmethod
    def poll_exit(self) -> ExitInfo | None:
        """Exit information if the process has ended, else ``None``. Never blocks for long."""

    @abstractmethod
    def wait_exit(self, timeout: float) -> ExitInfo | None:
        """Wait up to ``timeout`` seconds for the process to end; ``None`` if it is still running."""

    @abstractmethod
    def stderr_log(self) -> str:
        """The agent's stderr (capped at ``Limits.log_bytes``, keeping the tail), decoded leniently."""

    @abstractmethod
    def kill(self) -> None:
        """Stop everything this agent started and release its resources. Safe to call twice."""

    def pin_cpus(self, cpus: frozenset[int]) -> bool:
        """Restrict the agent (every process and thread it has, and those it starts later) to the cores
        ``cpus``; False when this sandbox cannot. Placement only: never a reason to fail a duel."""
        return False

    def freeze(self) -> bool:
        """Stop every process of the agent from running until ``thaw`` (its opponent's turn: a waiting
        agent must not take CPU from the agent whose clock runs). Cheap (µs) and idempotent; False when
        this sandbox cannot freeze this agent."""
        return False

    def thaw(self) -> None:  # noqa: B027 - optional, pairs with freeze
        """Let a frozen agent run again (idempotent; a no-op when it is not frozen)."""

    def harness_pid(self) -> int:
        """The pid (as this process sees it) of the process running the user's code, whose main thread
        answers the referee; 0 when unknown. The seat reads its scheduler statistics to tell a slow agent
        from one the machine starved."""
        return 0

    def data_root(self) -> str | None:
        """Where the agent's data folder is, as this process reaches it while the agent runs (through the
        sandbox's mount namespace), or ``None`` when it has none. Read it with ``agent_data.read_folder``:
        it holds whatever the agent left there."""
        return None

    def cpu_usage(self) -> CpuUsage | None:
        """A counter of the CPU seconds every process of the agent used (its cgroup's), or ``None``."""
        return None

    def memory_exhausted(self, grace: float = 0.0) -> str:
        """A sentence when the agent ran out of memory (the kernel OOM-killed one of its processes, or its
        usage reached the memory limit), else ``""``. Read after a deadline passed or the channel broke, to
        charge ``MEMORY_LIMIT`` instead of ``TIMEOUT`` / ``CRASH``. ``grace``: an agent still filling its
        memory (a quarter of its limit or more) is watched that many seconds more
        (``cgroups.MemoryWatch.exhausted``)."""
        return ""

    def __enter__(self) -> AgentProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


class Sandbox(ABC):
    """Starts agent processes. Implementations: ``local`` (subprocess, bubblewrap) and ``docker``."""

    #: Short name used on the command line and in settings.
    name: str
    #: One honest sentence on how strong the isolation is, shown to operators.
    isolation: str

    @abstractmethod
    def launch(self, spec: LaunchSpec) -> AgentProcess:
        """Start the agent; return once the channel is connected (raise ``SandboxError`` if it cannot be).

        Waiting for the harness's ``ready`` message is the referee's job, not the sandbox's.
        """

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources shared by launches (temporary folders, clients)."""
