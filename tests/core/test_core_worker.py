"""Real Celery worker processes (Redis + Postgres, or the filesystem broker + SQLite) running the whole
flow, and surviving a killed worker and a wiped broker with exactly one stored result."""

import time
from pathlib import Path

import pytest
from core_testlib import wait_for, zip_player

from core.actions import schedule_duel, submit_revision
from core.models import Build, Duel, Rating, Revision, SmokeTest

pytestmark = [pytest.mark.slow, pytest.mark.redis]
MATCHES = 60  # tic-tac-toe minimax self-play: a few seconds
DELIBERATE = Path(__file__).resolve().parents[1] / "agents" / "deliberate"


def revision_state(pk):
    return Revision.objects.values_list("state", flat=True).get(pk=pk)


def wait_eligible(revision, timeout=120):
    final = {"ELIGIBLE", "BUILD_FAILED", "TEST_FAILED"}
    wait_for(lambda: revision_state(revision.pk) in final, timeout, f"revision {revision.pk} to be tested")
    revision.refresh_from_db()
    assert revision.state == "ELIGIBLE", revision.error_message
    return revision


def test_uploads_are_built_smoke_tested_and_dueled_by_a_worker(start_worker, environments, make_user):
    worker = start_worker()
    started = time.monotonic()
    owner = make_user()
    minimax = submit_revision(owner, "tic-tac-toe", "minimax", zip_player("minimax"))
    rand = submit_revision(owner, "tic-tac-toe", "random", zip_player("random"))
    for revision in (minimax, rand):
        wait_eligible(revision)
    eligible_after = time.monotonic() - started
    duel = schedule_duel(minimax, rand)
    wait_for(lambda: Duel.objects.get(pk=duel.pk).state == "FINISHED", 120, "the duel to finish")
    duel.refresh_from_db()
    print(
        f"\nupload->eligible (2 revisions): {eligible_after:.1f}s; upload->duel finished: "
        f"{time.monotonic() - started:.1f}s"
    )
    assert duel.matches.count() == environments["tic-tac-toe"].matches_per_duel
    assert duel.other_errors == duel.player_1_errors == duel.player_2_errors == 0
    assert Build.objects.filter(state="SUCCEEDED").count() == 2
    assert SmokeTest.objects.filter(passed=True).count() == 2
    # The rating step (tournament_manager, triggered by task name after the result is stored).
    wait_for(lambda: Duel.objects.get(pk=duel.pk).rated, 60, "the duel to be rated")
    assert Rating.objects.filter(competitor__in=[minimax.competitor, rand.competitor]).count() == 2
    assert "Traceback" not in worker.log()
