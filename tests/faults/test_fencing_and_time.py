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
from faultlib import DUEL_RECORD_LOCK, through

from core.actions import schedule_duel
from core.models import Duel, Match

pytestmark = [pytest.mark.slow, pytest.mark.redis]
DELIBERATE = Path(__file__).resolve().parents[1] / "agents" / "deliberate"
DUEL_TASK_OUTCOME = re.compile(r"duel_runner\.run_duel\[[^\]]+\] succeeded in [\d.]+s: '([\w ]+)'")
FAKETIME_LIB = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")


def duel_state(duel_id: int) -> tuple[str, int, int]:
    return Duel.objects.values_list("state", "generation", "attempts").get(pk=duel_id)


def _outcome(log: str) -> str | None:
    """The outcome of the first ``run_duel`` task in a worker's log, once it has one."""
    found = DUEL_TASK_OUTCOME.search(log)
    return found.group(1) if found else None


def test_a_worker_that_lost_its_lease_cannot_record_the_duel_another_worker_holds(
    start_worker, eligible, db_proxy
):
    a, b = eligible(str(DELIBERATE), name="a"), eligible(str(DELIBERATE), name="b")
    stalled = start_worker(WORKER_CONCURRENCY="1")
    duel = schedule_duel(a, b, num_matches=40)  # deliberate players: several seconds of play
    wait_for(lambda: duel_state(duel.pk)[0] == "RUNNING", 60, "the first worker to claim the duel")
    assert duel_state(duel.pk)[1] == 1, "a claim must advance the fencing token (generation 0 -> 1)"
    stalled.kill(signal.SIGSTOP)  # the worker, its heartbeat and its agents freeze mid-duel
    try:
        # The second worker's reaper takes the job back after a lease without heartbeat, and it claims and
        # plays the duel; its record waits in the proxy until the stale worker has tried to write.
        held = db_proxy.trap(DUEL_RECORD_LOCK, "hold")
        # Its record is held inside its transaction on purpose, for as long as the stale worker takes to
        # wake: PostgreSQL must not end that session as a frozen worker's (core.worker).
        start_worker(
            WORKER_CONCURRENCY="1",
            DATABASE_URL=through(db_proxy, worker_database_url()),
            WORKER_DB_IDLE_TRANSACTION_TIMEOUT_S="0",
        )
        held.wait(120, "the second worker to play the duel and record it")
        assert duel_state(duel.pk)[:2] == ("RUNNING", 2), "the second claim must advance the fencing token"
    finally:
        stalled.kill(signal.SIGCONT)  # the stalled worker wakes up and finishes its stale duel
    try:
        outcome = wait_for(lambda: _outcome(stalled.log()), 120, "the stale run to end")
        assert outcome == "refused", stalled.log()[-3000:]  # the stale write changed nothing
        assert duel_state(duel.pk)[:2] == ("RUNNING", 2)
    finally:
        held.release()
    wait_for(lambda: duel_state(duel.pk)[0] == "FINISHED", 120, "the duel to be recorded")
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


#: A duel worker in one process (the body of the ``run_duel`` task: ``run_job(DUEL, id)``) whose clock is
#: libfaketime's. libfaketime 0.9.10 makes Python's ``time.sleep`` fail (its ``clock_nanosleep``), so this
#: process sleeps with ``select``; its agents and other children do not inherit the fake clock.
SKEWED_WORKER = (
    "import os, select, sys, time\n"
    "os.environ.pop('LD_PRELOAD', None)\n"
    "time.sleep = lambda s: select.select([], [], [], max(0.0, s))\n"
    "import django; django.setup()\n"
    "from core.jobs.runner import run_job\n"
    "from duel_runner.tasks import DUEL\n"
    "print('outcome', run_job(DUEL, int(sys.argv[1])), flush=True)\n"
)


def start_skewed_worker(offset: str, duel_id: int, database_url: str, broker, settings) -> subprocess.Popen:
    """Play duel ``duel_id`` in a process whose clock is ``offset`` (libfaketime: ``+20m``, ``-20m``) off."""
    if not FAKETIME_LIB.exists():
        pytest.fail(f"{FAKETIME_LIB} is missing: run_tests.sh installs Debian's faketime package")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "core.settings",
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": broker.url,
        "DATA_DIR": str(settings.DATA_DIR),
        "SANDBOX": "local",
        "LEASE_SECONDS": str(settings.LEASE_SECONDS),
        "HEARTBEAT_SECONDS": "1",
        "SECRET_KEY": "test-secret-key-" + "x" * 40,
        "LD_PRELOAD": str(FAKETIME_LIB),
        "FAKETIME": offset,
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }
    return subprocess.Popen(
        [sys.executable, "-c", SKEWED_WORKER, str(duel_id)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def test_a_worker_whose_clock_runs_20_minutes_slow_keeps_its_duel(
    start_worker, eligible, db_proxy, broker, settings
):
    # Its lease must end a lease after its last heartbeat in database time, not 20 minutes ago.
    a, b = eligible(str(DELIBERATE), name="a"), eligible(str(DELIBERATE), name="b")
    duel = schedule_duel(a, b, num_matches=20)
    held = db_proxy.trap(DUEL_RECORD_LOCK, "hold")  # the slow worker's record waits for the test
    slow = start_skewed_worker("-20m", duel.pk, through(db_proxy, worker_database_url()), broker, settings)
    try:
        wait_for(lambda: duel_state(duel.pk)[0] == "RUNNING", 60, "the slow worker to claim the duel")
        live = start_worker(WORKER_CONCURRENCY="1")  # its reaper runs every second; the duel's hint is queued
        held.wait(120, "the slow worker to finish the duel")
        # The live worker got the duel's hint meanwhile: it must have found the slow worker's lease running.
        outcome = wait_for(lambda: _outcome(live.log()), 60, "the live worker to try the duel's hint")
        assert outcome == "not claimed", live.log()[-3000:]
        assert duel_state(duel.pk) == ("RUNNING", 1, 1)  # and its reaper took nothing
    finally:
        held.release()
        out, _ = slow.communicate(timeout=120)
    assert "outcome recorded" in out, out[-3000:]
    assert duel_state(duel.pk) == ("FINISHED", 1, 1)


def test_a_worker_whose_clock_runs_20_minutes_fast_loses_its_duel_a_lease_after_it_dies(
    start_worker, eligible, broker, settings
):
    # Its lease must end a lease after its last heartbeat in database time, not 20 minutes later.
    a, b = eligible(str(DELIBERATE), name="a"), eligible(str(DELIBERATE), name="b")
    duel = schedule_duel(a, b, num_matches=20)
    fast = start_skewed_worker("+20m", duel.pk, worker_database_url(), broker, settings)
    try:
        wait_for(lambda: duel_state(duel.pk)[0] == "RUNNING", 60, "the fast worker to claim the duel")
    finally:
        os.killpg(fast.pid, signal.SIGKILL)  # it dies holding the duel
        fast.wait(timeout=10)
    start_worker(WORKER_CONCURRENCY="1")
    wait_for(lambda: duel_state(duel.pk)[0] == "FINISHED", 180, "another worker to re-run the duel")
    assert duel_state(duel.pk) == ("FINISHED", 2, 2)
    assert Match.objects.filter(duel=duel).count() == 20
