"""A stored data folder that its own archive cannot fill, through the platform (issue 27): the duel runner
plays a real duel in the local sandbox, the agent whose folder cannot be restored loses every match
(CRASH), its opponent is not charged, nothing is replayed as infrastructure, and the stored folder is
emptied with a note for its owner."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable
from typing import Any

import pytest
from core_testlib import REPO

from core.actions import Claim, claim_duel, load_agent_data, save_agent_data, schedule_duel
from core.models import Duel, Match, StoredAgentData
from run_duel.agent_data import archive_of, files_of

RANDOM = str(REPO / "example_players" / "random")


def _named_twice() -> bytes:
    """A tar naming ``seed.txt`` twice: it passes the archive checks, but its second member cannot be
    written (``File exists``)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:", format=tarfile.PAX_FORMAT) as tar:
        for content in (b"one", b"two"):
            info = tarfile.TarInfo("seed.txt")
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


@pytest.mark.django_db(transaction=True)
def test_a_stored_folder_its_agent_cannot_restore_is_its_loss_and_emptied(
    make_revision: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    from duel_runner.tasks import run_duel

    monkeypatch.setattr("core.jobs.runner.current_problem", lambda max_age_s=None: None)
    settings.SANDBOX = "local"
    first, second = make_revision(agent_ref=RANDOM), make_revision(agent_ref=RANDOM)
    c1, c2 = first.competitor_id, second.competitor_id
    earlier = schedule_duel(first, second)
    job = claim_duel(earlier.pk, "w1")
    assert job is not None
    assert save_agent_data(Claim.of(job), c1, 0, _named_twice(), earlier.pk)
    assert save_agent_data(Claim.of(job), c2, 0, archive_of({"kept.txt": b"fine"}), earlier.pk)

    duel = schedule_duel(first, second)
    assert run_duel(duel.pk) == "recorded"

    duel = Duel.objects.get(pk=duel.pk)
    matches = list(Match.objects.filter(duel=duel))
    assert matches and {m.result for m in matches} == {"PLAYER_1_ERROR"}
    assert {m.error_kind for m in matches} == {"CRASH"}
    assert load_agent_data(c1) == (b"", 2)  # emptied: the save bumped the generation
    assert "could not be restored" in StoredAgentData.objects.get(competitor_id=c1).last_problem
    assert files_of(load_agent_data(c2)[0]) == {"kept.txt": b"fine"}  # the opponent played and saved
