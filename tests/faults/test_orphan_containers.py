"""Agent containers a worker leaves behind, with the real Docker engine.

- A worker killed mid-duel (SIGKILL to it and its pool process) leaves its agents' containers running,
  one of them frozen, as a referee that dies between two moves leaves its waiting agent: another worker
  of the host thaws and removes them (its own sweeping thread, ``duel_runner.containers``), while its
  reaper re-queues the duel and it is played again.
- A graceful stop (SIGTERM) of a worker with warm containers leaves none behind.

Containers are told apart from other tests' by their owner labels (the pids of this test's workers).
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from core_testlib import wait_for

from core.actions import schedule_duel
from core.models import Duel, Match
from run_duel.sandbox import cgroups
from run_duel.sandbox.docker_client import get_client
from run_duel.sandbox.docker_config import LABEL, LABEL_VALUE
from run_duel.sandbox.docker_process import AGENT_SUBGROUP

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.redis]
DELIBERATE = Path(__file__).resolve().parents[1] / "agents" / "deliberate"
MATCHES = 60


@pytest.fixture
def docker_players(settings, eligible, transactional_db):
    if subprocess.run(["docker", "info"], capture_output=True).returncode:
        pytest.skip("no Docker engine")
    settings.SANDBOX = "docker"
    return eligible(str(DELIBERATE), name="a"), eligible(str(DELIBERATE), name="b")


def pids_of(worker) -> set[str]:
    """The worker's process and its pool processes (the owners its containers are labelled with)."""
    found = subprocess.run(["pgrep", "-g", str(worker.proc.pid)], capture_output=True, text=True).stdout
    return set(found.split())


def containers_of(pids: set[str]) -> list[dict]:
    """The agent containers (running or not) owned by one of ``pids``."""
    listed = get_client().api.containers(all=True, filters={"label": f"{LABEL}={LABEL_VALUE}"})
    return [c for c in listed if (c.get("Labels") or {}).get(f"{LABEL}.owner-pid") in pids]


def seat_group(container_id: str) -> Path | None:
    """The freezer sub-group of a warm container holding its agent (``docker.AGENT_SUBGROUP``), if any."""
    dirs = cgroups.container_dirs(container_id)
    top = dirs.get("freezer") or dirs.get(cgroups.V2)
    sub = top / AGENT_SUBGROUP if top is not None else None
    return sub if sub is not None and (sub / "cgroup.procs").is_file() else None


def seat_groups(owners: set[str]) -> list[Path]:
    return [g for c in containers_of(owners) if (g := seat_group(c["Id"])) is not None]


def freeze(group: Path) -> None:
    """What a referee killed between two moves leaves: its waiting agent's freezer group FROZEN (the
    engine's own kill thaws a container's top group, never a sub-group frozen by itself)."""
    freezer = cgroups.Freezer(group, v2=(group / "cgroup.freeze").exists())
    freezer.freeze()
    os.close(freezer._fd)  # leave it frozen (``close`` would thaw it)
    wait_for(freezer.is_frozen, 30, "the agent's group to be frozen")


def test_a_worker_killed_while_its_agent_is_frozen_leaves_no_container_and_no_stalled_duel(
    start_worker, docker_players
):
    a, b = docker_players
    env = {"SANDBOX": "docker", "WORKER_CONCURRENCY": "1", "DUEL_SANDBOX_REUSE": "1"}  # warm seats
    first = start_worker(**env)
    duel = schedule_duel(a, b, num_matches=MATCHES)
    wait_for(lambda: Duel.objects.get(pk=duel.pk).state == "RUNNING", 120, "the duel to start")
    owners = pids_of(first)
    wait_for(lambda: len(seat_groups(owners)) >= 2, 120, "its agents in their warm containers")
    first.kill()  # SIGKILL to the worker and its pool process: the referee dies, its agents do not
    first.proc.wait(timeout=30)
    assert containers_of(owners), "the killed worker's agents are still there"
    freeze(seat_groups(owners)[0])
    second = start_worker(**env)  # the host's other worker: its sweeping thread and its reaper
    wait_for(lambda: not containers_of(owners), 180, "the orphan containers to be removed")
    assert "was frozen" in second.log() and "thawed" in second.log(), second.log()[-3000:]
    wait_for(lambda: Duel.objects.get(pk=duel.pk).state == "FINISHED", 300, "the duel to be played again")
    duel.refresh_from_db()
    assert duel.attempts == 2 and Match.objects.filter(duel=duel).count() == MATCHES
    assert duel.player_1_errors == duel.player_2_errors == duel.other_errors == 0


def test_a_graceful_stop_leaves_no_warm_container_behind(start_worker, docker_players):
    worker = start_worker(SANDBOX="docker", WORKER_CONCURRENCY="1", DUEL_SANDBOX_REUSE="1")
    duel = schedule_duel(*docker_players, num_matches=4)
    wait_for(lambda: Duel.objects.get(pk=duel.pk).state == "FINISHED", 300, "the duel")
    owners = pids_of(worker)
    assert containers_of(owners), "the worker keeps its warm containers between duels"
    os.kill(worker.proc.pid, signal.SIGTERM)  # a warm shutdown, as `docker stop` or systemd do
    worker.proc.wait(timeout=120)
    assert not containers_of(owners), containers_of(owners)
