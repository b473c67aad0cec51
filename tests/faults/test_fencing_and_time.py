"""Fencing and database time, with real worker processes.

- A worker that stalls past its lease (SIGSTOP, as a long GC pause, a frozen VM or swapping would do)
  loses its duel to another worker; when it wakes up and finishes, its write is refused.
- A reaper whose clock runs 20 minutes fast (libfaketime) takes nothing from a live worker: leases are
  compared with the database's clock.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from core_testlib import REPO, wait_for, worker_database_url

from core.actions import schedule_duel
from core.models import Duel, Match

pytestmark = [pytest.mark.slow, pytest.mark.redis]
DELIBERATE = Path(__file__).resolve().parents[1] / "agents" / "deliberate"
DUEL_TASK_OUTCOME = re.compile(r"duel_runner\.run_duel\[[^\]]+\] succeeded in [\d.]+s: '(\w+)'")
FAKETIME_LIB = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")


def duel_state(duel_id: int) -> tuple[str, int, int]:
    return Duel.objects.values_list("state", "generation", "attempts").get(pk=duel_id)


def test_a_worker_that_lost_its_lease_cannot_record_the_duel_another_worker_holds(start_worker, eligible):
    a, b = eligible(str(DELIBERATE), name="a"), eligible(str(DELIBERATE), name="b")
    stalled = start_worker(WORKER_CONCURRENCY="1")
    duel = schedule_duel(a, b, num_matches=40)  # deliberate players: several seconds of play
    wait_for(lambda: duel_state(duel.pk)[:2] == ("RUNNING", 1), 60, "the first worker to claim the duel")
    stalled.kill(signal.SIGSTOP)  # the worker, its heartbeat and its agents freeze mid-duel
    try:
        start_worker(WORKER_CONCURRENCY="1")  # its reaper takes the job back after a lease without heartbeat
        wait_for(lambda: duel_state(duel.pk)[1] == 2, 90, "a second worker to claim the duel")
    finally:
        stalled.kill(signal.SIGCONT)  # the stalled worker wakes up and finishes its stale duel
    wait_for(lambda: duel_state(duel.pk)[0] == "FINISHED", 120, "the duel to be recorded")
    wait_for(
        lambda: "run_duel" in stalled.log() and "succeeded" in stalled.log(), 120, "the stale run to end"
    )
    assert "'refused'" in stalled.log(), stalled.log()[-3000:]
    duel.refresh_from_db()
    assert Match.objects.filter(duel=duel).count() == 40
    assert duel.generation == 2
    assert duel.player_1_errors == duel.player_2_errors == 0  # the stall's timeouts were never stored


def test_a_reaper_whose_clock_runs_20_minutes_fast_takes_nothing_from_a_live_worker(
    start_worker, eligible, settings
):
    if not FAKETIME_LIB.exists():
        pytest.fail(f"{FAKETIME_LIB} is missing: run_tests.sh installs Debian's faketime package")
    a, b = eligible(str(DELIBERATE), name="a"), eligible(str(DELIBERATE), name="b")
    start_worker(WORKER_CONCURRENCY="1")
    duel = schedule_duel(a, b, num_matches=150)  # deliberate players: about ten seconds of play
    wait_for(lambda: duel_state(duel.pk)[0] == "RUNNING", 60, "the duel to start", interval=0.05)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "core.settings",
        "DATABASE_URL": worker_database_url(),
        "DATA_DIR": str(settings.DATA_DIR),
        "LEASE_SECONDS": str(settings.LEASE_SECONDS),
        "SECRET_KEY": "test-secret-key-" + "x" * 40,
        "CELERY_BROKER_URL": "memory://",
        "LD_PRELOAD": str(FAKETIME_LIB),
        "FAKETIME": "+20m",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }
    script = (
        "import django, select; django.setup()\n"
        "from core.models import Duel\n"
        "from duel_runner.reaper import reap\n"
        "rounds = 0\n"
        f"while Duel.objects.get(pk={duel.pk}).state == 'RUNNING' and rounds < 200:\n"
        "    reap(); rounds += 1; select.select([], [], [], 0.1)\n"  # libfaketime breaks time.sleep
        "print('rounds', rounds)\n"
    )
    skewed = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert skewed.returncode == 0, skewed.stderr[-3000:]
    rounds = int(skewed.stdout.split()[-1])
    assert rounds >= 3, skewed.stdout  # the skewed reaper ran again and again while the duel was live
    clock = subprocess.run(
        [sys.executable, "-c", "import time; print(time.time())"], env=env, capture_output=True, text=True
    )
    assert float(clock.stdout) - time.time() > 19 * 60  # the reaper really lived 20 minutes ahead
    wait_for(lambda: duel_state(duel.pk)[0] == "FINISHED", 120, "the duel to finish")
    assert duel_state(duel.pk) == ("FINISHED", 1, 1)
