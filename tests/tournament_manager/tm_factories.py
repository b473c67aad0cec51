"""Factories shared by the tournament manager's database tests (imported by name: pytest puts this folder
on ``sys.path``). They go through the real ``core.actions``; Django must be set up (``conftest.py``)."""

from __future__ import annotations

import uuid
from typing import Any


def add_revision(competitor: Any, state: str = "ELIGIBLE", **extra: Any) -> Any:
    """A new revision of ``competitor``; an ELIGIBLE one becomes current."""
    from core.models import Revision

    version = competitor.next_version
    competitor.next_version += 1
    # Each revision its own code unless told (matchmaking never pairs two competitors running the same zip).
    code = uuid.uuid4().hex * 2
    values = {"agent_ref": "/nonexistent/agent", "zip_path": "x.zip", "content_hash": code} | extra
    revision = Revision.objects.create(competitor=competitor, version=version, state=state, **values)
    if state == "ELIGIBLE":
        competitor.current_revision = revision
    competitor.save(update_fields=["next_version", "current_revision"])
    return revision


def duel_json(results: list[str]) -> dict[str, Any]:
    """A duel JSON (rl-arena format) with these match results."""
    wins1, wins2 = results.count("PLAYER_1_WIN"), results.count("PLAYER_2_WIN")
    verdict = "PLAYER_1_WIN" if wins1 > wins2 else "PLAYER_2_WIN" if wins2 > wins1 else "DRAW"
    return {
        "result": verdict,
        "error_msg": "",
        "num_matches": len(results),
        "player_1_errors": results.count("PLAYER_1_ERROR"),
        "player_2_errors": results.count("PLAYER_2_ERROR"),
        "other_errors": results.count("OTHER_ERROR"),
        "player_1_wins": wins1,
        "player_2_wins": wins2,
        "draws": results.count("DRAW"),
        "player_1_score": float(wins1 - wins2),
        "player_2_score": float(wins2 - wins1),
        "matches": [
            {
                "result": r,
                "error_msg": "",
                "player_1_score": 0.0,
                "player_2_score": 0.0,
                "first_player": "PLAYER_1" if k % 2 == 0 else "PLAYER_2",
                "states": [],
            }
            for k, r in enumerate(results)
        ],
    }


def record(duel_id: int, results: list[str]) -> bool:
    """Play queued duel ``duel_id`` the way a worker does: claim it, then record ``results`` with that
    claim (the rating is triggered, not run)."""
    from core.actions import Claim, claim_duel, record_duel_result

    duel = claim_duel(duel_id, "test-worker")
    assert duel is not None, f"duel {duel_id} could not be claimed"
    return record_duel_result(Claim.of(duel), duel_json(results))


def play(competitor_1: Any, competitor_2: Any, results: list[str], **schedule: Any) -> Any:
    """Schedule a duel between the competitors' current revisions and record ``results`` (no rating yet)."""
    from core.actions import schedule_duel

    competitor_1.refresh_from_db()
    competitor_2.refresh_from_db()
    duel = schedule_duel(competitor_1.current_revision_id, competitor_2.current_revision_id, **schedule)
    assert record(duel.pk, results)
    duel.refresh_from_db()
    return duel
