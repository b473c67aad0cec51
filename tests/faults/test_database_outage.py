"""PostgreSQL unreachable at the three moments of a duel where an outage hurts: before play, during play,
and at record (the record itself, or the reply to its COMMIT).

The worker reaches PostgreSQL through a proxy that reads its statements (``faultlib.PgProxy``) and cuts the
database at one chosen statement: every connection reset, new ones refused, so from the worker's side the
database is gone. The test keeps its own connection to watch, and restores the database once the worker
has shown (in its log) that it reacted, so nothing depends on how fast the machine is:

- **before play** (cut at the duel's read of its data folders, right after its claim): nothing was played,
  nothing can be recorded; the duel's hint is sent again rather than dropped, and the duel is re-run once
  its lease ends, with one result and nobody charged;
- **during play** (cut at the first write of the matches played so far): the duel finishes, its result is
  spooled (``DATA_DIR/spool``) and recorded once when the database answers, with the attempt that played it;
- **at record** (cut at the record's first statement): spooled, and recorded by a restarted worker;
- **a lost COMMIT reply** (the record committed, the worker never heard so): the worker's retry, then its
  spool, present the same claim again for a FINISHED duel, and are refused: the result counts once.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from core_testlib import wait_for, worker_database_url
from faultlib import (
    DUEL_DATA_FOLDER_READ,
    DUEL_FINISHED_WRITE,
    DUEL_LIVE_MATCHES_LOCK,
    DUEL_RECORD_LOCK,
    through,
)

from core.actions import schedule_duel
from core.models import Duel, Match, PairRecord
from tests.small_disk import small_tmpfs

pytestmark = [pytest.mark.slow, pytest.mark.redis, pytest.mark.postgres]
DELIBERATE = Path(__file__).resolve().parents[1] / "agents" / "deliberate"
MATCHES = 30


def _worker_env(db_proxy, **extra: str) -> dict[str, str]:
    return {
        "DATABASE_URL": through(db_proxy, worker_database_url()),
        "DB_SAVE_RETRIES": "2",  # give up saving after ~0.5 s: the spool takes over
        "WORKER_CONCURRENCY": "1",
        "WORKER_HEALTH_INTERVAL_SECONDS": "1",
        **extra,
    }


def _players(eligible) -> tuple:
    """Two deliberate players (10 ms a move: a duel lasts seconds whatever the machine), built and
    smoke-tested in this process before any worker starts."""
    return eligible(str(DELIBERATE), name="a"), eligible(str(DELIBERATE), name="b")


def _spooled(worker) -> list[Path]:
    return list((Path(worker.log_path).parent / "data" / "spool").glob("duel-*.json"))


def _state(duel: Duel) -> tuple[str, int, int]:
    return Duel.objects.values_list("state", "attempts", "generation").get(pk=duel.pk)


def _played_once_uncharged(duel: Duel) -> Duel:
    duel.refresh_from_db()
    assert duel.state == "FINISHED"
    assert Match.objects.filter(duel=duel).count() == MATCHES
    assert duel.player_1_errors == duel.player_2_errors == duel.other_errors == 0
    pair = PairRecord.objects.get()
    assert (pair.duels, pair.low_wins + pair.high_wins + pair.draws) == (1, MATCHES)  # counted once
    return duel


def test_an_outage_before_play_drops_no_hint_and_the_duel_is_rerun_after_its_lease(
    start_worker, eligible, db_proxy
):
    players = _players(eligible)
    # No beat in this worker: no reaper re-sends anything; the duel comes back only through its own hint.
    worker = start_worker(beat=False, **_worker_env(db_proxy))
    trap = db_proxy.trap(DUEL_DATA_FOLDER_READ, "cut")
    duel = schedule_duel(*players, num_matches=MATCHES)
    trap.wait(60, "the duel to read its data folders after its claim")
    assert _state(duel) == ("RUNNING", 1, 1)  # claimed, nothing played
    wait_for(lambda: "the hint is sent again" in worker.log(), 60, "the worker to keep the duel's hint")
    db_proxy.restore()
    wait_for(lambda: _state(duel)[0] == "FINISHED", 120, "the duel to be re-run once its lease ended")
    duel = _played_once_uncharged(duel)
    assert (duel.attempts, duel.generation) == (2, 2)  # the first attempt never played
    assert not _spooled(worker)  # nothing was played, nothing spooled


def test_a_result_finished_during_an_outage_is_spooled_and_recorded_once(start_worker, eligible, db_proxy):
    players = _players(eligible)
    worker = start_worker(**_worker_env(db_proxy))
    trap = db_proxy.trap(r'INSERT INTO "core_match"', "cut", after=DUEL_LIVE_MATCHES_LOCK)
    duel = schedule_duel(*players, num_matches=MATCHES)
    trap.wait(120, "the running duel to store its first matches")
    assert _state(duel) == ("RUNNING", 1, 1)
    assert Match.objects.filter(duel=duel).count() == 0  # the outage began mid-duel
    wait_for(lambda: "outcome in" in worker.log(), 120, "the worker to spool the finished duel")
    assert _spooled(worker), "the result was written to the spool folder"
    assert _state(duel)[0] == "RUNNING"  # nothing reached the database
    db_proxy.restore()
    wait_for(lambda: _state(duel)[0] == "FINISHED", 120, "the spooled result")
    duel = _played_once_uncharged(duel)
    assert (duel.attempts, duel.generation) == (1, 1)  # not re-run: the played result was kept
    wait_for(lambda: not _spooled(worker), 30, "the spool file to go once recorded")


def test_a_result_spooled_at_record_survives_a_worker_restart(start_worker, eligible, db_proxy):
    players = _players(eligible)
    worker = start_worker(**_worker_env(db_proxy))
    trap = db_proxy.trap(DUEL_RECORD_LOCK, "cut")
    duel = schedule_duel(*players, num_matches=MATCHES)
    trap.wait(120, "the duel to record its result")
    wait_for(lambda: "outcome in" in worker.log(), 60, "the worker to spool the finished duel")
    assert _spooled(worker)
    worker.stop()  # the result must survive the worker process
    assert _state(duel)[0] == "RUNNING"
    db_proxy.restore()
    start_worker(**_worker_env(db_proxy))
    wait_for(lambda: _state(duel)[0] == "FINISHED", 120, "the spooled result")
    duel = _played_once_uncharged(duel)
    assert (duel.attempts, duel.generation) == (1, 1)


def test_a_result_whose_commit_reply_was_lost_is_not_recorded_twice(start_worker, eligible, db_proxy):
    players = _players(eligible)
    worker = start_worker(**_worker_env(db_proxy))
    trap = db_proxy.trap(r"COMMIT", "cut-after-reply", after=DUEL_FINISHED_WRITE)
    duel = schedule_duel(*players, num_matches=MATCHES)
    trap.wait(120, "the record's COMMIT")
    assert _state(duel)[0] == "FINISHED"  # committed: only the reply was lost
    finished_at = Duel.objects.get(pk=duel.pk).finished_at
    # The worker cannot know: it retries the same record, then spools it; once the database answers, the
    # same claim is presented again for a FINISHED duel, and must be refused.
    wait_for(lambda: "outcome in" in worker.log(), 60, "the worker to spool the result it could not confirm")
    db_proxy.restore()
    wait_for(lambda: "outcome refused" in worker.log(), 60, "the spooled result to be presented again")
    duel = _played_once_uncharged(duel)
    assert duel.finished_at == finished_at
    assert (duel.attempts, duel.generation) == (1, 1)


def test_a_result_neither_the_database_nor_a_full_disk_can_take_is_kept_until_the_database_answers(
    start_worker, eligible, db_proxy, data_dir
):
    players = _players(eligible)
    with small_tmpfs(data_dir / "spool", "4k") as folder:
        # The disk filled after the worker's health check passed (SPOOL_MIN_FREE_MB=0: not checked).
        worker = start_worker(**_worker_env(db_proxy, SPOOL_MIN_FREE_MB="0"))
        trap = db_proxy.trap(DUEL_RECORD_LOCK, "cut")
        duel = schedule_duel(*players, num_matches=MATCHES)
        trap.wait(120, "the duel to record its result")
        wait_for(lambda: "cannot be spooled" in worker.log(), 60, "the spool to refuse the result")
        assert list(folder.iterdir()) == []  # nothing half-written
        db_proxy.restore()
        wait_for(lambda: _state(duel)[0] == "FINISHED", 120, "the result kept in memory")
        duel = _played_once_uncharged(duel)
        assert (duel.attempts, duel.generation) == (1, 1)  # the played result was not lost
