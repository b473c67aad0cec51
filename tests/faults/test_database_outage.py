"""PostgreSQL unreachable while a duel is played: its result is kept and recorded once the database is back.

The worker reaches PostgreSQL through a proxy the test cuts (every connection reset, new ones refused),
so from the worker's side the database is gone; the test keeps its own connection to watch. The duel
finishes during the outage, the save fails past its retries, the result goes to the worker's spool
(``DATA_DIR/spool``), and the worker's monitor records it when the proxy answers again: once, with the
attempt that played it, whether the outage lasts 10 seconds or a minute and a worker restart.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from core_testlib import wait_for, worker_database_url
from faultlib import through

from core.actions import schedule_duel
from core.models import Duel, Match

pytestmark = [pytest.mark.slow, pytest.mark.redis, pytest.mark.postgres]
DELIBERATE = Path(__file__).resolve().parents[1] / "agents" / "deliberate"
MATCHES = 30


def _worker_env(db_proxy) -> dict[str, str]:
    return {
        "DATABASE_URL": through(db_proxy, worker_database_url()),
        "DB_SAVE_RETRIES": "2",  # give up saving after ~0.5 s: the spool takes over
        "WORKER_CONCURRENCY": "1",
        "WORKER_HEALTH_INTERVAL_SECONDS": "1",
    }


def _play_through_an_outage(start_worker, eligible, db_proxy, outage_s: float, *, restart: bool) -> Duel:
    a, b = eligible(str(DELIBERATE), name="a"), eligible(str(DELIBERATE), name="b")
    worker = start_worker(**_worker_env(db_proxy))
    duel = schedule_duel(a, b, num_matches=MATCHES)
    wait_for(lambda: Duel.objects.get(pk=duel.pk).state == "RUNNING", 60, "the duel to start", interval=0.05)
    db_proxy.cut()
    cut_at = time.monotonic()
    wait_for(lambda: "outcome in" in worker.log(), 60, "the worker to spool the finished duel")
    spooled = list((Path(worker.log_path).parent / "data" / "spool").glob("duel-*.json"))
    assert Duel.objects.get(pk=duel.pk).state == "RUNNING"  # nothing reached the database
    if restart:
        worker.stop()  # the result must survive the worker process
    time.sleep(max(0.0, outage_s - (time.monotonic() - cut_at)))
    db_proxy.restore()
    if restart:
        worker = start_worker(**_worker_env(db_proxy))
    wait_for(lambda: Duel.objects.get(pk=duel.pk).state == "FINISHED", 120, "the spooled result")
    # The worker logs the spooled outcome right after its commit: the log line may trail the state.
    wait_for(lambda: "outcome recorded" in worker.log(), 30, "the worker to log the spooled outcome")
    assert spooled, "the result was written to the spool folder"
    duel.refresh_from_db()
    return duel


def test_a_result_finished_during_a_10_s_database_outage_is_recorded_once(start_worker, eligible, db_proxy):
    duel = _play_through_an_outage(start_worker, eligible, db_proxy, 10, restart=False)
    assert (duel.attempts, duel.generation) == (1, 1)  # not re-run: the played result was kept
    assert Match.objects.filter(duel=duel).count() == MATCHES
    assert duel.player_1_errors == duel.player_2_errors == duel.other_errors == 0


def test_a_result_survives_a_60_s_database_outage_and_a_worker_restart(start_worker, eligible, db_proxy):
    duel = _play_through_an_outage(start_worker, eligible, db_proxy, 60, restart=True)
    assert (duel.attempts, duel.generation) == (1, 1)
    assert Match.objects.filter(duel=duel).count() == MATCHES
