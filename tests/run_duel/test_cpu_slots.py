"""CPU placement: a duel's referee and agents share one core (``run_duel.cpu_slots``)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from run_duel_helpers import FAST_LIMITS

from run_duel.cpu_slots import claim_cpu_slot, slot_width
from run_duel.referee import play_duel
from run_duel.sandbox.base import LaunchSpec

CPUS = sorted(os.sched_getaffinity(0))
needs_two_cores = pytest.mark.skipif(len(CPUS) < 2, reason="placement needs at least two usable cores")

#: A legal player that reports the cores it may run on (and those of a thread it starts) at every end.
AFFINITY_PLAYER = Path(__file__).resolve().parents[1] / "agents" / "affinity"


def last_affinity_line(log: str) -> str:
    lines = [line for line in log.splitlines() if line.startswith("AFFINITY")]
    assert lines, log[-2000:]
    return lines[-1]


@needs_two_cores
def test_slots_are_exclusive_until_released(tmp_path: Path) -> None:
    held = [claim_cpu_slot(lock_dir=tmp_path) for _ in CPUS]
    assert all(slot is not None for slot in held)
    assert sorted(cpu for slot in held for cpu in slot.cpus) == CPUS  # one core each, all different
    assert claim_cpu_slot(lock_dir=tmp_path) is None  # every core taken: the duel runs unpinned
    held[0].release()
    again = claim_cpu_slot(lock_dir=tmp_path)
    assert again is not None and again.cpus == held[0].cpus
    for slot in [again, *held[1:]]:
        slot.release()


@needs_two_cores
def test_slots_of_another_process_are_respected(tmp_path: Path) -> None:
    held = [claim_cpu_slot(lock_dir=tmp_path) for _ in CPUS[1:]]
    pid = os.fork()
    if pid == 0:  # the child: one core left for it
        slot = claim_cpu_slot(lock_dir=tmp_path)
        taken = {cpu for other in held for cpu in other.cpus}
        os._exit(0 if slot is not None and not slot.cpus & taken else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    for slot in held:
        slot.release()


def test_placement_can_be_switched_off_and_needs_spare_cores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DUEL_CPU_PINNING", "off")
    assert claim_cpu_slot(lock_dir=tmp_path) is None
    monkeypatch.setenv("DUEL_CPU_PINNING", "on")
    assert claim_cpu_slot(len(CPUS), lock_dir=tmp_path) is None  # a slot as wide as the machine: pointless
    assert [slot_width(c) for c in (0.25, 1.0, 1.5, 2.0)] == [1, 1, 2, 2]


@needs_two_cores
def test_a_slot_pins_the_calling_thread_and_restores_it(tmp_path: Path) -> None:
    before = os.sched_getaffinity(0)
    slot = claim_cpu_slot(lock_dir=tmp_path)
    assert slot is not None
    slot.pin_current_thread()
    assert os.sched_getaffinity(0) == slot.cpus
    other: list[set[int]] = []
    thread = threading.Thread(target=lambda: other.append(os.sched_getaffinity(0)))
    thread.start()
    thread.join()
    assert other == [slot.cpus]  # threads the referee starts meanwhile inherit the slot
    slot.release()
    slot.release()
    assert os.sched_getaffinity(0) == before


@needs_two_cores
def test_a_duel_runs_its_agents_and_referee_on_one_core_once_ready(sandbox, private_cpu_slots: Path) -> None:
    agent = AFFINITY_PLAYER
    before = os.sched_getaffinity(0)
    spec = LaunchSpec(agent=str(agent), limits=FAST_LIMITS)
    duel = play_duel("tic-tac-toe", sandbox, spec, spec, matches=2, pin_cpus=True)
    assert duel["player_1_errors"] == duel["player_2_errors"] == duel["other_errors"] == 0, duel["error_msg"]
    assert duel["cpus"] is not None and len(duel["cpus"]) == 1
    assert list(private_cpu_slots.iterdir())  # the slot was claimed in this test's own folder
    expected = f"AFFINITY {duel['cpus']} {duel['cpus']}"  # the process and a thread it starts later
    assert last_affinity_line(duel["player_1_log"]) == expected
    assert last_affinity_line(duel["player_2_log"]) == expected
    assert os.sched_getaffinity(0) == before  # the referee's thread got its cores back


@needs_two_cores
def test_a_duel_runs_unpinned_when_other_duels_hold_every_slot(sandbox, private_cpu_slots: Path) -> None:
    held = [claim_cpu_slot() for _ in CPUS]  # as many duels as cores already run
    assert all(slot is not None for slot in held)
    try:
        spec = LaunchSpec(agent=str(AFFINITY_PLAYER), limits=FAST_LIMITS)
        duel = play_duel("tic-tac-toe", sandbox, spec, spec, matches=2, pin_cpus=True)
    finally:
        for slot in held:
            slot.release()
    assert duel["player_1_errors"] == duel["player_2_errors"] == duel["other_errors"] == 0, duel["error_msg"]
    assert duel["cpus"] is None  # no free core: the kernel balances this duel, nobody waits for a slot
    assert last_affinity_line(duel["player_1_log"]) == f"AFFINITY {CPUS} {CPUS}"
    assert last_affinity_line(duel["player_2_log"]) == f"AFFINITY {CPUS} {CPUS}"


def test_an_unpinned_duel_leaves_agents_on_every_core(sandbox) -> None:
    agent = AFFINITY_PLAYER
    spec = LaunchSpec(agent=str(agent), limits=FAST_LIMITS)
    duel = play_duel("tic-tac-toe", sandbox, spec, spec, matches=2, pin_cpus=False)
    assert duel["cpus"] is None
    assert last_affinity_line(duel["player_1_log"]) == f"AFFINITY {CPUS} {CPUS}"
