"""The reaper is never starved by job hints: a worker stalled mid-duel (SIGSTOP) behind a backlog of a
thousand hints has its expired lease re-queued by the control plane's own consumer.

With ``CONTROL_QUEUE`` set (docker-compose and terraform: ``control``), beat's reaper rounds, ratings and
matchmaking go to a queue of their own, served by a consumer of its own, so they never wait behind the
job hints of the workers' queue. Here the only consumer of that queue is stalled, so the backlog does not
move at all while the reaper must still act: nothing depends on how fast the machine drains it.

A worker can also freeze *inside* a transaction that holds its duel's row lock (between the lock and the
write of its live matches). The reaper then must neither wait for that lock (it would stall every other
re-queue behind one frozen process) nor leave the duel RUNNING until the worker wakes: the reaper skips
rows locked by others (``core.actions.jobs.lock_expired``) and PostgreSQL ends a worker session idle in a
transaction for ``WORKER_DB_IDLE_TRANSACTION_TIMEOUT_S`` (``core.worker``), which gives the lock back.
The freeze is placed by the statement proxy (``faultlib.PgProxy``): the write after the lock is held, so
the session sits idle inside its transaction whatever the machine's speed.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from core_testlib import wait_for, worker_database_url
from faultlib import DUEL_LIVE_MATCHES_LOCK, through

from core.actions import schedule_duel
from core.jobs.health import live_slots
from core.models import Duel, Match
from core.queue import broker_queue_size, send_task

pytestmark = [pytest.mark.slow, pytest.mark.redis]
DELIBERATE = Path(__file__).resolve().parents[1] / "agents" / "deliberate"
BACKLOG = 1000
CONTROL = {"CONTROL_QUEUE": "control", "WORKER_CONCURRENCY": "1"}


def test_an_expired_lease_is_reaped_while_the_stalled_worker_sits_behind_a_backlog_of_hints(
    start_worker, eligible, settings
):
    a, b = eligible(str(DELIBERATE), name="a"), eligible(str(DELIBERATE), name="b")
    # The control plane: beat and the consumer of the control queue (no sandbox of its own).
    start_worker(queues="control", WORKER_HEALTH_PROBE="", **CONTROL)
    stalled = start_worker(beat=False, **CONTROL)  # the only consumer of the job hints
    # Its one slot is the fleet's capacity for job hints (the control plane's consumer serves none).
    wait_for(lambda: live_slots() == 1, 60, "the job worker to report its slot")
    duel = schedule_duel(a, b, num_matches=40)  # deliberate players: several seconds of play
    wait_for(lambda: Duel.objects.get(pk=duel.pk).state == "RUNNING", 60, "the worker to claim the duel")
    stalled.kill(signal.SIGSTOP)  # a GC pause, a frozen VM: its heartbeat stops, it holds its messages
    try:
        for n in range(BACKLOG):  # hints of duels that do not exist: each would be a no-op
            send_task(Duel.task_name, 10**9 + n)
        queue = settings.CELERY_TASK_DEFAULT_QUEUE
        assert (broker_queue_size(queue) or 0) >= BACKLOG
        wait_for(
            lambda: Duel.objects.get(pk=duel.pk).state == "QUEUED",
            120,
            "the reaper to re-queue the stalled worker's duel",
        )
        assert "no heartbeat for a lease" in Duel.objects.get(pk=duel.pk).failure_reason
        assert (broker_queue_size(queue) or 0) >= BACKLOG  # the backlog did not move: the reaper ran apart
    finally:
        stalled.kill(signal.SIGCONT)
    # Awake, the worker takes its duel back (nobody claimed it since) or plays it again: one result.
    wait_for(lambda: Duel.objects.get(pk=duel.pk).state == "FINISHED", 300, "the duel to be recorded")
    assert Match.objects.filter(duel=duel).count() == 40


def test_a_worker_frozen_inside_its_transaction_gives_its_lock_back_to_the_reaper(
    start_worker, eligible, settings, db_proxy
):
    a, b = eligible(str(DELIBERATE), name="a"), eligible(str(DELIBERATE), name="b")
    start_worker(queues="control", WORKER_HEALTH_PROBE="", **CONTROL)  # the control plane, straight to the DB
    # The job worker reaches the database through the proxy: its first write of live matches, right after
    # it locked its duel's row, is held there, so its session idles inside the transaction with the lock.
    held = db_proxy.trap(r'INSERT INTO "core_match"', "hold", after=DUEL_LIVE_MATCHES_LOCK)
    frozen = start_worker(beat=False, DATABASE_URL=through(db_proxy, worker_database_url()), **CONTROL)
    wait_for(lambda: live_slots() == 1, 60, "the job worker to report its slot")
    duel = schedule_duel(a, b, num_matches=40)
    try:
        held.wait(120, "the job worker's first write of live matches, after its lock")
        frozen.kill(signal.SIGSTOP)  # and the process itself freezes, with its transaction open
        for n in range(BACKLOG):
            send_task(Duel.task_name, 10**9 + n)
        wait_for(
            lambda: Duel.objects.get(pk=duel.pk).state == "QUEUED",
            120,
            "the reaper to re-queue the duel a frozen transaction held",
        )
        assert "no heartbeat for a lease" in Duel.objects.get(pk=duel.pk).failure_reason
    finally:
        frozen.kill(signal.SIGCONT)
        held.release()
    # Awake, the worker finds its session ended; the duel is played again (by it) and recorded once.
    wait_for(lambda: Duel.objects.get(pk=duel.pk).state == "FINISHED", 300, "the duel to be recorded")
    assert Match.objects.filter(duel=duel).count() == 40
