"""Each competitor's persistent data folder: the actions (fenced, compare-and-set, capped), the wipe of a
new playing revision, and the duel runner's wiring (without a sandbox: ``play_duel`` is replaced by a
stand-in that fills the folders the way the referee does; the end-to-end test is in tests/run_duel)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest
from core_testlib import duel_json

from core.actions import (
    Claim,
    DataSave,
    claim_duel,
    claim_smoke_test,
    finish_smoke_test,
    load_agent_data,
    load_playable_data,
    note_agent_data_problem,
    record_duel_with_data,
    reset_agent_data,
    save_agent_data,
    schedule_duel,
    submit_revision,
)
from core.actions.agent_data import MB, data_cap_mb
from core.actions.jobs import db_in
from core.actions.submissions import reject_revision
from core.jobs import spool
from core.jobs.runner import flush_spool
from core.models import Competitor, Duel, Match, Revision, SmokeTest, StoredAgentData
from run_duel.agent_data import archive_of, files_of

pytestmark = pytest.mark.django_db
#: Tests that run a task through the job runner commit like in production (its heartbeat thread has its own
#: connection, which must not wait on the test's transaction).
RUNS_TASKS = pytest.mark.django_db(transaction=True)


def claimed_duel(duel: Duel, worker: str = "w1") -> Claim:
    job = claim_duel(duel.pk, worker)
    assert job is not None
    return Claim.of(job)


@pytest.fixture
def pair(make_revision: Callable[..., Any]) -> tuple[Revision, Revision]:
    return make_revision(), make_revision()


@pytest.fixture
def duel(pair: tuple[Revision, Revision]) -> Duel:
    return schedule_duel(*pair)


def stored(competitor_id: int) -> StoredAgentData:
    return StoredAgentData.objects.get(competitor_id=competitor_id)


# --- the actions -----------------------------------------------------------------------------------------


def test_a_competitor_without_data_starts_empty_at_generation_zero(pair: tuple[Revision, Revision]) -> None:
    assert load_agent_data(pair[0].competitor_id) == (b"", 0)


def test_a_save_stores_the_folder_and_bumps_the_generation(duel: Duel) -> None:
    competitor = duel.revision_1.competitor_id
    claim = claimed_duel(duel)
    archive = archive_of({"stats.json": b'{"wins": 3}', "book/openings.txt": b"e4 e5\n"})
    assert save_agent_data(claim, competitor, 0, archive, duel.pk)
    assert load_agent_data(competitor) == (archive, 1)
    row = stored(competitor)
    assert (row.size_bytes, row.files, row.updated_by_duel_id, row.last_problem) == (17, 2, duel.pk, "")
    assert row.updated_at is not None


def test_a_reset_between_load_and_save_makes_the_save_lose(duel: Duel) -> None:
    competitor = duel.revision_1.competitor_id
    claim = claimed_duel(duel)
    _archive, generation = load_agent_data(competitor)  # what the duel read before playing
    reset_agent_data(competitor)  # the owner resets while it plays
    assert not save_agent_data(claim, competitor, generation, archive_of({"old.txt": b"stale"}), duel.pk)
    assert load_agent_data(competitor) == (b"", 1)
    row = stored(competitor)
    assert "the folder was reset or another duel of this agent saved" in row.last_problem
    assert row.last_problem_at is not None


def test_of_two_overlapping_duels_the_first_save_wins(pair: tuple[Revision, Revision]) -> None:
    competitor = pair[0].competitor_id
    first, second = schedule_duel(*pair), schedule_duel(*pair)
    claim_1, claim_2 = claimed_duel(first), claimed_duel(second)
    generation = load_agent_data(competitor)[1]  # both read generation 0 before playing
    assert save_agent_data(claim_1, competitor, generation, archive_of({"a": b"first"}), first.pk)
    assert not save_agent_data(claim_2, competitor, generation, archive_of({"a": b"second"}), second.pk)
    archive, generation = load_agent_data(competitor)
    assert (files_of(archive), generation) == ({"a": b"first"}, 1)
    assert f"duel {second.pk}" in stored(competitor).last_problem


def test_a_stale_claim_cannot_save(duel: Duel) -> None:
    competitor = duel.revision_1.competitor_id
    stale = claimed_duel(duel, "cut-off")
    Duel.objects.filter(pk=duel.pk).update(lease_expires_at=db_in(-1))
    live = claimed_duel(duel, "live")
    assert not save_agent_data(stale, competitor, 0, archive_of({"x": b"late"}), duel.pk)
    assert load_agent_data(competitor) == (b"", 0)
    assert not StoredAgentData.objects.filter(competitor_id=competitor).exists()  # nothing noted either
    assert save_agent_data(live, competitor, 0, archive_of({"x": b"live"}), duel.pk)


def test_a_finished_duel_cannot_save_any_more(duel: Duel) -> None:
    claim = claimed_duel(duel)
    assert record_duel_with_data(claim, duel_json(), [])
    assert not save_agent_data(claim, duel.revision_1.competitor_id, 0, archive_of({"x": b"1"}), duel.pk)


def test_an_archive_over_the_cap_is_refused(duel: Duel, settings: Any) -> None:
    settings.AGENT_DATA_MB = 1
    competitor = duel.revision_1.competitor_id
    claim = claimed_duel(duel)
    assert data_cap_mb("tic-tac-toe") == 1
    assert not save_agent_data(claim, competitor, 0, archive_of({"big.bin": b"\0" * (MB + 1)}), duel.pk)
    assert load_agent_data(competitor) == (b"", 0)
    assert "refused" in stored(competitor).last_problem and "MB" in stored(competitor).last_problem
    assert save_agent_data(claim, competitor, 0, archive_of({"fits.bin": b"\0" * MB}), duel.pk)


def test_a_stored_folder_over_todays_cap_starts_empty_and_is_replaced_by_the_next_save(
    duel: Duel, settings: Any
) -> None:
    competitor = duel.revision_1.competitor_id
    claim = claimed_duel(duel)
    assert save_agent_data(claim, competitor, 0, archive_of({"big.bin": b"\0" * (2 * MB)}), duel.pk)
    settings.AGENT_DATA_MB = 1  # the operator lowered the cap since
    assert load_playable_data(competitor, "tic-tac-toe") == (b"", 1)
    assert "no longer fits" in stored(competitor).last_problem
    assert save_agent_data(claim, competitor, 1, archive_of({"small": b"1"}), duel.pk)
    assert load_playable_data(competitor, "tic-tac-toe") == (archive_of({"small": b"1"}), 2)


def test_a_malformed_archive_is_refused(duel: Duel) -> None:
    competitor = duel.revision_1.competitor_id
    assert not save_agent_data(claimed_duel(duel), competitor, 0, b"this is no tar" * 100, duel.pk)
    assert load_agent_data(competitor) == (b"", 0)
    assert "refused" in stored(competitor).last_problem


def test_a_noted_problem_keeps_the_content_and_a_reset_clears_it(duel: Duel) -> None:
    competitor = duel.revision_1.competitor_id
    assert save_agent_data(claimed_duel(duel), competitor, 0, archive_of({"k": b"v"}), duel.pk)
    note_agent_data_problem(competitor, "duel 9: your agent was not running at the end of the duel")
    assert load_agent_data(competitor)[1] == 1 and stored(competitor).last_problem.startswith("duel 9")
    reset_agent_data(competitor)
    row = stored(competitor)
    assert (bytes(row.archive), row.generation, row.files, row.size_bytes) == (b"", 2, 0, 0)
    assert (row.last_problem, row.updated_by_duel_id) == ("", None)


def test_the_result_and_the_folders_are_stored_together(duel: Duel) -> None:
    c1, c2 = duel.revision_1.competitor_id, duel.revision_2.competitor_id
    claim = claimed_duel(duel)
    saves = [
        DataSave(c2, 0, None, "your agent was not running at the end of the duel"),
        DataSave(c1, 0, archive_of({"n": b"1"})),
    ]
    assert record_duel_with_data(claim, duel_json(n=2), saves)
    assert Duel.objects.get(pk=duel.pk).state == "FINISHED"
    assert files_of(load_agent_data(c1)[0]) == {"n": b"1"}
    assert load_agent_data(c2) == (b"", 0)
    assert stored(c2).last_problem == f"duel {duel.pk}: your agent was not running at the end of the duel"
    assert not record_duel_with_data(claim, duel_json(n=2), saves)  # once only
    assert load_agent_data(c1)[1] == 1


def test_a_result_that_cannot_be_stored_saves_no_folder(duel: Duel) -> None:
    competitor = duel.revision_1.competitor_id
    claim = claimed_duel(duel)
    with pytest.raises(ValueError, match="bad result"):
        record_duel_with_data(
            claim, duel_json(result="NOBODY"), [DataSave(competitor, 0, archive_of({"a": b"1"}))]
        )
    assert load_agent_data(competitor) == (b"", 0)
    assert Duel.objects.get(pk=duel.pk).state == "RUNNING"


def test_a_stale_claim_stores_neither_result_nor_folder(duel: Duel) -> None:
    competitor = duel.revision_1.competitor_id
    stale = claimed_duel(duel, "cut-off")
    Duel.objects.filter(pk=duel.pk).update(lease_expires_at=db_in(-1))
    claimed_duel(duel, "live")
    saves = [DataSave(competitor, 0, archive_of({"a": b"1"})), DataSave(competitor, 0, None, "crashed")]
    assert not record_duel_with_data(stale, duel_json(), saves)
    assert not StoredAgentData.objects.filter(competitor_id=competitor).exists()
    assert not Match.objects.filter(duel=duel).exists()


# --- a new playing revision may start with an empty folder ----------------------------------------------


def _pass_smoke_test(revision: Revision) -> None:
    smoke = SmokeTest.objects.create(revision=revision)
    job = claim_smoke_test(smoke.pk, "w1")
    assert job is not None
    assert finish_smoke_test(Claim.of(job), passed=True, reason="ok")


def _with_data(duel: Duel, competitor_id: int) -> None:
    """The folder holds ``memory``, saved at the end of a duel of ``duel``'s revisions."""
    played = schedule_duel(duel.revision_1, duel.revision_2)
    generation = load_agent_data(competitor_id)[1]
    assert save_agent_data(
        claimed_duel(played), competitor_id, generation, archive_of({"memory": b"old"}), played.pk
    )


def test_a_revision_with_wipe_data_empties_the_folder_when_it_starts_playing(
    make_revision: Callable[..., Any], duel: Duel
) -> None:
    competitor = Competitor.objects.get(pk=duel.revision_1.competitor_id)
    _with_data(duel, competitor.pk)
    running = schedule_duel(duel.revision_1, duel.revision_2)  # a duel of the old revision, in flight
    running_claim = claimed_duel(running)
    generation = load_agent_data(competitor.pk)[1]

    keeps = make_revision(state="BUILT", competitor=competitor)
    _pass_smoke_test(keeps)
    assert Competitor.objects.get(pk=competitor.pk).current_revision_id == keeps.pk
    assert files_of(load_agent_data(competitor.pk)[0]) == {"memory": b"old"}  # no wipe asked: carries on

    wipes = make_revision(state="BUILT", competitor=competitor, wipe_data=True)
    _pass_smoke_test(wipes)
    assert Competitor.objects.get(pk=competitor.pk).current_revision_id == wipes.pk
    assert load_agent_data(competitor.pk) == (b"", generation + 1)
    # The old revision's duel ends after the wipe: what it left is not written back.
    assert not save_agent_data(
        running_claim, competitor.pk, generation, archive_of({"memory": b"v1"}), running.pk
    )
    assert load_agent_data(competitor.pk)[0] == b""


def test_an_older_revision_that_never_plays_does_not_wipe(
    make_revision: Callable[..., Any], duel: Duel
) -> None:
    competitor = Competitor.objects.get(pk=duel.revision_1.competitor_id)
    _with_data(duel, competitor.pk)
    newer = make_revision(state="BUILT", competitor=competitor)
    older_wiping = Revision.objects.create(
        competitor=competitor,
        version=0,
        state="BUILT",
        agent_ref="/x",
        zip_path="x",
        content_hash="0" * 64,
        wipe_data=True,
    )
    _pass_smoke_test(newer)
    _pass_smoke_test(older_wiping)  # eligible, but not newer than the playing revision
    assert Competitor.objects.get(pk=competitor.pk).current_revision_id == newer.pk
    assert files_of(load_agent_data(competitor.pk)[0]) == {"memory": b"old"}


def test_falling_back_to_a_revision_with_wipe_data_empties_the_folder(
    make_revision: Callable[..., Any], duel: Duel
) -> None:
    competitor = Competitor.objects.get(pk=duel.revision_1.competitor_id)
    fallback = make_revision(state="BUILT", competitor=competitor, wipe_data=True)
    _pass_smoke_test(fallback)
    latest = make_revision(state="BUILT", competitor=competitor)
    _pass_smoke_test(latest)
    _with_data(duel, competitor.pk)  # written while `latest` played
    reject_revision(latest.pk, "refused by an operator")
    assert Competitor.objects.get(pk=competitor.pk).current_revision_id == fallback.pk
    assert load_agent_data(competitor.pk)[0] == b""


def test_the_upload_records_wipe_data(make_user: Callable[..., Any], environments: dict[str, Any]) -> None:
    from core_testlib import zip_player

    owner = make_user()
    first = submit_revision(owner, "tic-tac-toe", "mem", zip_player("random"))
    second = submit_revision(owner, "tic-tac-toe", "mem", zip_player("random"), wipe_data=True)
    assert (first.wipe_data, Revision.objects.get(pk=second.pk).wipe_data) == (False, True)


# --- the duel runner's wiring ----------------------------------------------------------------------------


class FakeSandbox:
    def close(self) -> None:
        pass


@pytest.fixture
def fake_play(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``play_duel`` replaced by a stand-in that records the launch specs and fills each saving seat's
    folder as the referee does (``leave``: seat -> archive, or a problem string)."""
    import duel_runner.tasks as duel_tasks
    import run_duel.api

    state: dict[str, Any] = {"leave": {}, "specs": [], "result": None}

    def play_duel(slug: str, sandbox: Any, agent_1: Any, agent_2: Any, **options: Any) -> dict[str, Any]:
        state["specs"] = [agent_1, agent_2]
        for seat, spec in ((1, agent_1), (2, agent_2)):
            if spec.data is None or not spec.data.save:
                continue
            left = state["leave"].get(seat, b"")
            if isinstance(left, str):
                spec.data.problem = left
            else:
                spec.data.saved = left
        return state["result"] or duel_json(n=2)

    monkeypatch.setattr(run_duel.api, "play_duel", play_duel)
    monkeypatch.setattr(run_duel.api, "validate_duel_json", lambda result: None)
    monkeypatch.setattr(duel_tasks, "duel_sandbox", FakeSandbox)
    monkeypatch.setattr("core.jobs.runner.current_problem", lambda max_age_s=None: None)
    return state


@RUNS_TASKS
def test_a_duel_starts_from_the_stored_folders_and_saves_what_the_agents_left(
    duel: Duel, fake_play: dict[str, Any], settings: Any
) -> None:
    from duel_runner.tasks import run_duel

    c1, c2 = duel.revision_1.competitor_id, duel.revision_2.competitor_id
    earlier = schedule_duel(duel.revision_1, duel.revision_2)
    assert save_agent_data(claimed_duel(earlier), c1, 0, archive_of({"games": b"1"}), earlier.pk)
    fake_play["leave"] = {
        1: archive_of({"games": b"2"}),
        2: "your agent was not running at the end of the duel",
    }

    assert run_duel(duel.pk) == "recorded"
    spec_1, spec_2 = fake_play["specs"]
    assert spec_1.limits.data_mb == spec_2.limits.data_mb == settings.AGENT_DATA_MB
    assert files_of(spec_1.data.archive) == {"games": b"1"} and spec_2.data.archive == b""
    assert spec_1.data.save and spec_2.data.save
    assert files_of(load_agent_data(c1)[0]) == {"games": b"2"}
    assert stored(c1).updated_by_duel_id == duel.pk
    assert load_agent_data(c2) == (b"", 0) and "not running" in stored(c2).last_problem


@RUNS_TASKS
def test_in_self_play_only_seat_one_saves(
    make_revision: Callable[..., Any], fake_play: dict[str, Any]
) -> None:
    from duel_runner.tasks import run_duel

    old = make_revision()
    new = make_revision(competitor=old.competitor)
    duel = schedule_duel(new, old)
    note = schedule_duel(new, old)
    assert save_agent_data(claimed_duel(note), old.competitor_id, 0, archive_of({"m": b"0"}), note.pk)
    fake_play["leave"] = {1: archive_of({"m": b"seat 1"}), 2: archive_of({"m": b"seat 2"})}
    assert run_duel(duel.pk) == "recorded"
    spec_1, spec_2 = fake_play["specs"]
    assert spec_1.data.archive == spec_2.data.archive and files_of(spec_1.data.archive) == {"m": b"0"}
    assert (spec_1.data.save, spec_2.data.save) == (True, False)
    assert files_of(load_agent_data(old.competitor_id)[0]) == {"m": b"seat 1"}


@RUNS_TASKS
def test_no_folder_when_data_folders_are_off(duel: Duel, fake_play: dict[str, Any], settings: Any) -> None:
    from duel_runner.tasks import run_duel

    settings.AGENT_DATA_MB = 0
    assert run_duel(duel.pk) == "recorded"
    assert all(spec.data is None and spec.limits.data_mb == 0 for spec in fake_play["specs"])
    assert not StoredAgentData.objects.exists()


@RUNS_TASKS
def test_a_duel_lost_to_our_side_saves_nothing(duel: Duel, fake_play: dict[str, Any]) -> None:
    from duel_runner.tasks import run_duel

    fake_play["leave"] = {1: archive_of({"x": b"1"}), 2: archive_of({"y": b"2"})}
    fake_play["result"] = {**duel_json(n=0), "result": "ERROR", "error_msg": "the engine went away"}
    assert run_duel(duel.pk) == "infrastructure error"
    assert Duel.objects.get(pk=duel.pk).state == "QUEUED"
    assert not StoredAgentData.objects.exists()


def test_a_spooled_outcome_saves_its_folders_when_it_is_recorded(duel: Duel) -> None:
    from duel_runner.tasks import AGENT_DATA_KEY

    competitor = duel.revision_1.competitor_id
    claim = claimed_duel(duel)
    folders = [
        {
            "competitor_id": competitor,
            "generation": 0,
            "archive": base64.b64encode(archive_of({"kept": b"yes"})).decode(),
            "problem": "",
        }
    ]
    spool.put("duel", claim, {**duel_json(n=3), AGENT_DATA_KEY: folders})  # the database was away
    assert flush_spool() == 1
    assert Duel.objects.get(pk=duel.pk).state == "FINISHED"
    assert Match.objects.filter(duel=duel).count() == 3
    assert files_of(load_agent_data(competitor)[0]) == {"kept": b"yes"}


@RUNS_TASKS
def test_the_smoke_test_gets_an_empty_scratch_folder_never_saved(
    make_revision: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    import duel_runner.tasks as duel_tasks
    import run_duel.api
    from run_duel.api import SmokeResult

    seen: list[Any] = []

    def smoke_test(slug: str, sandbox: Any, spec: Any, **options: Any) -> SmokeResult:
        seen.append(spec)
        return SmokeResult(True, "ok", duel_json(n=2))

    monkeypatch.setattr(run_duel.api, "smoke_test", smoke_test)
    monkeypatch.setattr(duel_tasks, "duel_sandbox", FakeSandbox)
    monkeypatch.setattr("core.jobs.runner.current_problem", lambda max_age_s=None: None)
    revision = make_revision(state="BUILT")
    smoke = SmokeTest.objects.create(revision=revision)
    assert duel_tasks.smoke_test_revision(smoke.pk) == "recorded"
    [spec] = seen
    assert (spec.data.archive, spec.data.save, spec.limits.data_mb) == (b"", False, settings.AGENT_DATA_MB)


def test_live_play_gets_a_copy_of_the_folder_never_saved(duel: Duel, settings: Any) -> None:
    from duel_runner.live_play import _data, _limits

    competitor = duel.revision_1.competitor_id
    assert save_agent_data(claimed_duel(duel), competitor, 0, archive_of({"m": b"1"}), duel.pk)
    limits = _limits("tic-tac-toe")
    assert limits.data_mb == settings.AGENT_DATA_MB
    data = _data(competitor, "tic-tac-toe", limits)
    assert files_of(data.archive) == {"m": b"1"} and not data.save
    settings.AGENT_DATA_MB = 0
    assert _data(competitor, "tic-tac-toe", _limits("tic-tac-toe")) is None


def _playing(revision: Revision) -> Revision:
    """``revision`` is its public competitor's playing revision."""
    Competitor.objects.filter(pk=revision.competitor_id).update(current_revision=revision, is_public=True)
    return Revision.objects.select_related("competitor__owner").get(pk=revision.pk)


@RUNS_TASKS
def test_a_strangers_challenge_writes_neither_stored_folder(
    pair: tuple[Revision, Revision], fake_play: dict[str, Any]
) -> None:
    """Issue 27: every duel saved both seats' folders, so anyone could rewrite any public competitor's
    folder with challenges. A challenge now gives both agents a copy that is thrown away."""
    from core.actions.challenge import issue_challenge
    from duel_runner.tasks import run_duel

    challenger, opponent = (_playing(revision) for revision in pair)
    c1, c2 = challenger.competitor_id, opponent.competitor_id
    earlier = schedule_duel(challenger, opponent)
    claim = claimed_duel(earlier)
    for competitor, content in ((c1, b"challenger's"), (c2, b"opponent's")):
        assert save_agent_data(claim, competitor, 0, archive_of({"memory": content}), earlier.pk)
    before = {c: (stored(c).archive, stored(c).generation, stored(c).updated_by_duel_id) for c in (c1, c2)}

    duel = issue_challenge(challenger.competitor.owner, c1, c2)  # the opponent's owner is a stranger
    assert duel.kind == Duel.Kind.CHALLENGE
    fake_play["leave"] = {1: archive_of({"memory": b"planted by the challenger"}), 2: archive_of({"x": b"2"})}
    assert run_duel(duel.pk) == "recorded"
    assert Duel.objects.get(pk=duel.pk).state == "FINISHED"
    spec_1, spec_2 = fake_play["specs"]
    assert files_of(spec_1.data.archive) == {"memory": b"challenger's"}  # each agent still reads its own
    assert files_of(spec_2.data.archive) == {"memory": b"opponent's"}
    assert not spec_1.data.save and not spec_2.data.save
    after = {c: (stored(c).archive, stored(c).generation, stored(c).updated_by_duel_id) for c in (c1, c2)}
    assert after == before


@RUNS_TASKS
@pytest.mark.parametrize("kind", ["LADDER", "TOURNAMENT", "FINALS"])
def test_the_duels_the_platform_schedules_save_both_folders(
    pair: tuple[Revision, Revision], fake_play: dict[str, Any], kind: str
) -> None:
    from duel_runner.tasks import DATA_SAVING_KINDS, run_duel

    assert set(DATA_SAVING_KINDS) == set(Duel.Kind) - {Duel.Kind.CHALLENGE}
    duel = schedule_duel(*pair)
    Duel.objects.filter(pk=duel.pk).update(kind=kind)  # a tournament's bookkeeping plays no part here
    fake_play["leave"] = {1: archive_of({"a": b"1"}), 2: archive_of({"b": b"2"})}
    assert run_duel(duel.pk) == "recorded"
    assert files_of(load_agent_data(pair[0].competitor_id)[0]) == {"a": b"1"}
    assert files_of(load_agent_data(pair[1].competitor_id)[0]) == {"b": b"2"}
