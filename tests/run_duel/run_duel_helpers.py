"""Helpers for the run_duel tests: paths, a tracking local sandbox, leak checks, throw-away agents."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from run_duel.sandbox.base import LaunchSpec, Limits
from run_duel.sandbox.local import LocalAgentProcess, LocalSandbox, bwrap_path
from run_duel.sandbox.local_cgroup import PIDS_CGROUP_ROOT

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "example_players"
RANDOM = EXAMPLES / "random"
MINIMAX = EXAMPLES / "minimax"
BROKEN = EXAMPLES / "broken"
HAS_BWRAP = bwrap_path() is not None
HAS_PIDS_CGROUP = (PIDS_CGROUP_ROOT / "cgroup.procs").exists() and os.access(PIDS_CGROUP_ROOT, os.W_OK)

#: Short deadlines keep the error tests quick; nothing asserts on wall-clock time.
FAST_LIMITS = Limits(move_timeout=1.0, init_timeout=5.0)


class TrackingSandbox(LocalSandbox):
    """The real local sandbox, remembering what it launched so tests can check nothing is left."""

    def __init__(self, **options: object) -> None:
        super().__init__(**options)
        self.launched: list[LocalAgentProcess] = []

    def launch(self, spec: LaunchSpec) -> LocalAgentProcess:
        proc = super().launch(spec)
        self.launched.append(proc)
        return proc


def processes_with_marker(marker: str) -> list[int]:
    """Pids of live (non-zombie) processes whose environment contains ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if marker.encode() in environ and stat.rsplit(")", 1)[1].split()[0] != "Z":
            found.append(int(entry))
    return found


def assert_nothing_left(sandbox: TrackingSandbox, marker: str | None = None) -> None:
    """No launched process alive, no temp folder, no cgroup, no process carrying ``marker``."""
    for proc in sandbox.launched:
        assert proc.poll_exit() is not None, f"process {proc.pid} was never reaped"
        assert proc.workdir is None or not Path(proc.workdir).exists(), proc.workdir
        if proc._cgroup is not None:
            assert not proc._cgroup.exists(), proc._cgroup.dirs
    if marker is not None:
        assert processes_with_marker(marker) == []


#: A legal player whose ``step`` behaviour is replaced by ``BODY`` (a function of valid_actions).
PLAYER_TEMPLATE = """
import os, sys, math
import numpy as np

class Player:
    def __init__(self, train_mode=False):
        self.moves = 0

    def start(self, state, valid_actions):
        self.moves = 1
        return self.act(state, valid_actions)

    def step(self, state, valid_actions, prev_reward):
        self.moves += 1
        return self.act(state, valid_actions)

    def end(self, state, prev_reward):
        pass

    def act(self, state, valid_actions):
{body}
"""


def player_source(body: str) -> str:
    """A full ``player.py`` whose ``act(state, valid_actions)`` has ``body`` (8-space indented)."""
    return PLAYER_TEMPLATE.format(body=textwrap.indent(textwrap.dedent(body), " " * 8))
