"""A worker killed mid-duel (SIGKILL to it, its children and its agents): nobody tells the database, the
duel's heartbeat stops, and once a lease has passed without one it is re-run from scratch by another
worker, with exactly one stored result and nobody charged."""

import time
from pathlib import Path

import pytest
from core_testlib import wait_for

from core.actions import schedule_duel
from core.models import Duel, Match

pytestmark = [pytest.mark.slow, pytest.mark.redis]
MATCHES = 60
DELIBERATE = Path(__file__).resolve().parents[1] / "agents" / "deliberate"


def test_a_duel_interrupted_by_a_killed_worker_is_rerun_after_its_lease_expires(
    start_worker, eligible, settings
):
    # Deliberate players (10 ms a move): the 60-match duel lasts ~5 s however fast the machine, so the
    # kill below always lands mid-duel.
    a, b = eligible(str(DELIBERATE), name="a"), eligible(str(DELIBERATE), name="b")
    first = start_worker()
    duel = schedule_duel(a, b, num_matches=MATCHES)
    wait_for(lambda: Duel.objects.get(pk=duel.pk).state == "RUNNING", 60, "the duel to start", interval=0.05)
    time.sleep(0.3)  # mid-duel
    first.kill()  # SIGKILL to the worker, its children and the agents
    first.proc.wait(timeout=10)
    assert Duel.objects.get(pk=duel.pk).state == "RUNNING"  # nobody told the database

    start_worker()
    wait_for(lambda: Duel.objects.get(pk=duel.pk).state == "FINISHED", 180, "the duel to be re-run")
    duel.refresh_from_db()
    assert duel.attempts == 2
    assert "no heartbeat for a lease" in duel.failure_reason
    assert Match.objects.filter(duel=duel).count() == MATCHES
    assert duel.player_1_errors == duel.player_2_errors == duel.other_errors == 0  # players not charged
