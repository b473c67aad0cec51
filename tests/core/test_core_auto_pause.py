"""A competitor whose playing revision keeps breaking the rules is paused, its owner told why, and a newer
revision that passes its smoke test lifts the pause (an operator's pause stays)."""

from __future__ import annotations

import pytest

from core.actions import (
    Claim,
    claim_duel,
    claim_smoke_test,
    finish_smoke_test,
    record_duel_result,
    schedule_duel,
    set_competitor_status,
)
from core.models import Competitor, Notification, Revision, SmokeTest

pytestmark = pytest.mark.django_db(transaction=True)


def _duel_json(errors_of_player_2: int, n: int = 4) -> dict:
    matches = []
    for i in range(n):
        erred = i < errors_of_player_2
        matches.append(
            {
                "result": "PLAYER_2_ERROR" if erred else "DRAW",
                "error_kind": "TIMEOUT" if erred else "",
                "error_msg": f"player 2 timed out on move {i} (limit 1.0 s)" if erred else "",
                "first_player": "PLAYER_1" if i % 2 == 0 else "PLAYER_2",
                "player_1_score": 1.0 if erred else 0.0,
                "player_2_score": -1.0 if erred else 0.0,
            }
        )
    return {
        "result": "PLAYER_1_WIN" if errors_of_player_2 else "DRAW",
        "num_matches": n,
        "player_1_wins": errors_of_player_2,
        "player_2_wins": 0,
        "draws": n - errors_of_player_2,
        "player_1_errors": 0,
        "player_2_errors": errors_of_player_2,
        "other_errors": 0,
        "matches": matches,
    }


def _play(opponent: Revision, revision: Revision, errors: int, kind: str = "LADDER") -> None:
    duel = schedule_duel(opponent, revision, kind=kind)
    claim = Claim.of(claim_duel(duel.pk, "w1"))
    assert record_duel_result(claim, _duel_json(errors))


@pytest.fixture
def playing(make_revision):
    """(opponent revision, the revision under test), the latter its competitor's playing revision."""
    opponent = make_revision()
    revision = make_revision()
    Competitor.objects.filter(pk=revision.competitor_id).update(current_revision=revision)
    return opponent, revision


def _competitor(revision: Revision) -> Competitor:
    return Competitor.objects.get(pk=revision.competitor_id)


def test_errors_in_half_the_matches_of_three_duels_in_a_row_pause_and_notify(playing):
    opponent, revision = playing
    _play(opponent, revision, errors=2)
    _play(opponent, revision, errors=4)
    assert _competitor(revision).status == "ACTIVE"
    _play(opponent, revision, errors=3)
    competitor = _competitor(revision)
    assert competitor.status == "PAUSED"
    assert "revision 1 broke the rules" in competitor.pause_reason
    assert "player 2 timed out on move 2" in competitor.pause_reason
    note = Notification.objects.get(user_id=competitor.owner_id, kind="COMPETITOR_PAUSED")
    assert competitor.pause_reason in note.body


def test_an_occasional_error_or_a_clean_duel_in_between_does_not_pause(playing):
    opponent, revision = playing
    for errors in (4, 1, 4, 0, 4, 4):
        _play(opponent, revision, errors=errors)
    assert _competitor(revision).status == "ACTIVE"
    _play(opponent, revision, errors=2)  # now the last three duels all erred in half their matches
    assert _competitor(revision).status == "PAUSED"


def test_challenges_never_pause_and_the_setting_can_disable_pausing(playing, settings):
    opponent, revision = playing
    for _ in range(3):
        _play(opponent, revision, errors=4, kind="CHALLENGE")
    assert _competitor(revision).status == "ACTIVE"
    settings.PAUSE_AFTER_ERROR_DUELS = 0
    for _ in range(3):
        _play(opponent, revision, errors=4)
    assert _competitor(revision).status == "ACTIVE"


def _pass_smoke_test(revision: Revision) -> None:
    smoke = claim_smoke_test(SmokeTest.objects.create(revision=revision).pk, "w1")
    assert finish_smoke_test(Claim.of(smoke), passed=True, reason="", duel_json=None, log="")


def test_a_newer_revision_that_passes_its_smoke_test_lifts_an_automatic_pause(playing, make_revision):
    opponent, revision = playing
    for _ in range(3):
        _play(opponent, revision, errors=4)
    assert _competitor(revision).status == "PAUSED"
    fixed = make_revision(state="TESTING", competitor=_competitor(revision))
    _pass_smoke_test(fixed)
    competitor = _competitor(revision)
    assert (competitor.status, competitor.pause_reason, competitor.current_revision_id) == (
        "ACTIVE",
        "",
        fixed.pk,
    )


def test_an_operators_pause_outlives_a_new_revision(playing, make_revision):
    _, revision = playing
    set_competitor_status(revision.competitor_id, "PAUSED", "abusive name")
    fixed = make_revision(state="TESTING", competitor=_competitor(revision))
    _pass_smoke_test(fixed)
    assert _competitor(revision).status == "PAUSED"
