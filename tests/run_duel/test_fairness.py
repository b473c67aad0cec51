"""Fairness: a waiting agent gets no CPU during its opponent's turn, whatever it forked or detached.

The spinner (``agents/spinner``) leaves detached processes (``setsid`` + double fork) spinning; the seat
driver freezes an agent's cgroup whenever it is not its turn. Checked on CPU clock ticks, never on wall
time: a frozen group accumulates none, however loaded the machine is.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from run_duel.referee import play_duel
from run_duel.sandbox.base import AgentProcess, LaunchSpec, Limits
from run_duel.sandbox.cgroups import Freezer
from run_duel.seat import Seat

AGENTS = Path(__file__).resolve().parent / "agents"
SPINNER = AGENTS / "spinner"
BUSY = AGENTS / "busy_60"
HZ = os.sysconf("SC_CLK_TCK")
START = Limits(init_timeout=60.0)


def _freezer(proc: AgentProcess) -> Freezer | None:
    """The freezer behind an agent process (local: its seat cgroup; Docker: its container's)."""
    cgroup = getattr(proc, "_cgroup", None)
    return cgroup.freezer if cgroup is not None else getattr(proc, "_freezer", None)


def _cpu_ticks(freezer: Freezer) -> tuple[int, int]:
    """(processes, user + system clock ticks used by them) of the freezer's cgroup."""
    pids = (freezer.directory / "cgroup.procs").read_text().split()
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return len(pids), ticks


def _assert_frozen_until_thawed(seat: Seat, *, required: bool = False) -> None:
    proc = seat.proc
    assert proc is not None, seat.fatal
    freezer = _freezer(proc)
    assert freezer is not None or not required, "the agent's freezer cgroup was not found"
    if freezer is None:
        pytest.skip("no writable freezer cgroup on this host")
    assert freezer.frozen  # ready -> frozen until its first turn
    time.sleep(0.1)  # each task stops at its next return to user mode
    count, before = _cpu_ticks(freezer)
    assert count >= 3  # the harness and at least two detached spinners, all in the agent's cgroup
    time.sleep(0.5)
    assert _cpu_ticks(freezer)[1] == before  # frozen: not one tick, spinners included
    proc.thaw()
    deadline = time.monotonic() + 30
    while _cpu_ticks(freezer)[1] == before:  # thawed, the spinners run again (the measure can fail)
        assert time.monotonic() < deadline, "the thawed spinners never ran"
        time.sleep(0.05)


def test_a_frozen_local_agent_and_its_detached_processes_get_no_cpu(any_sandbox):
    seat = Seat(0, any_sandbox, LaunchSpec(str(SPINNER), limits=START))
    try:
        seat.spawn()
        seat.await_ready()
        _assert_frozen_until_thawed(seat)
    finally:
        seat.discard()


# -- Docker -------------------------------------------------------------------------------------------


@pytest.mark.docker
@pytest.mark.parametrize("found_by", ["pid", "id"])
def test_a_frozen_container_and_its_detached_processes_get_no_cpu(docker_sandbox, image, found_by):
    """``found_by="id"``: as a referee that cannot see the container's processes (another pid namespace)
    finds its cgroup, from the container id."""
    seat = Seat(0, docker_sandbox, LaunchSpec(image(str(SPINNER)), limits=START))
    try:
        seat.spawn()
        if found_by == "id":
            seat.proc.attach_cgroup(0)
        seat.await_ready()
        _assert_frozen_until_thawed(seat, required=found_by == "id")
    finally:
        seat.discard()


def _spinner_gain_during_opponent_turns(duel: dict[str, Any]) -> tuple[float, float, int]:
    """(CPU seconds the spinner's processes gained between two of its own moves, wall seconds the
    opponent thought meanwhile, how many such intervals), over the duel. The spinner is player 2 and
    logs ``SPIN <ticks>`` at each move; its moves alternate with the opponent's within a match."""
    log = duel["player_2_log"].splitlines()
    readings = [int(line.split()[1]) for line in log if line.startswith("SPIN ")]
    gained = opponent = 0.0
    intervals = cursor = 0
    for match in duel["matches"]:
        first = match["first_player"] == "PLAYER_2"
        times = match["move_times"]
        spinner_moves = len(times[0::2] if first else times[1::2])
        mine = readings[cursor : cursor + spinner_moves]
        cursor += spinner_moves
        between = times[1::2] if first else times[2::2]  # the opponent's moves after a spinner move
        for k in range(1, len(mine)):
            gained += (mine[k] - mine[k - 1]) / HZ
            opponent += between[k - 1]
            intervals += 1
    return gained, opponent, intervals


@pytest.mark.docker
@pytest.mark.parametrize("pinned", [True, False], ids=["pinned", "unpinned"])
def test_an_agent_using_60_percent_of_its_move_limit_never_times_out_against_a_cpu_spinner(
    docker_sandbox, image, pinned
):
    """The property: an agent that computes 60 % of its move limit (CPU seconds) at every move is never
    charged a timeout against a CPU spinner, pinned or not. The spinner is frozen during its turns (it
    gains no CPU then), and what the machine's own load takes is credited back (``Seat._receive``)."""
    duel = play_duel(
        "tic-tac-toe",
        docker_sandbox,
        LaunchSpec(image(str(BUSY))),  # 60 % of the 1 s limit
        LaunchSpec(image(str(SPINNER))),
        matches=2,
        limits=Limits(move_timeout=1.0, init_timeout=60.0),
        pin_cpus=pinned,
    )
    assert duel["player_1_errors"] == duel["player_2_errors"] == duel["other_errors"] == 0, [
        m["error_msg"] for m in duel["matches"]
    ]
    gained, opponent, intervals = _spinner_gain_during_opponent_turns(duel)
    assert intervals > 0
    # Unfrozen, the spinners would take most of the thinking agent's core; frozen they gain nothing but
    # for a tick per interval that may land in the spinner's own, thawed, turn.
    assert gained <= 0.05 * opponent + intervals / HZ, (gained, opponent, intervals)
