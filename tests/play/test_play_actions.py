"""Live play: a person against an agent running in the local sandbox, driven by the real task
(``duel_runner.play_session``) in a thread, with moves exchanged through the database."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from core.actions import ActionError
from core.actions.play import IllegalMoveError, human_move, start_play_session
from core.models import Duel, PlaySession, Rating
from environments import get_game

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db


def _wait(session_id: int, predicate: Any, timeout: float = 20) -> PlaySession:
    deadline = time.monotonic() + timeout
    while True:
        session = PlaySession.objects.select_related("environment").get(pk=session_id)
        if predicate(session):
            return session
        if time.monotonic() > deadline:
            pytest.fail(f"session {session_id} stuck: {session.status} after {session.moves} moves")
        time.sleep(0.02)


def _my_turn(session: PlaySession) -> bool:
    game = get_game(session.environment.slug)
    return session.status == PlaySession.Status.FINISHED or (
        session.status == PlaySession.Status.PLAYING
        and not game.is_over(session.state)
        and game.to_move(session.state) == session.human_seat
    )


def _play_to_the_end(session_id: int, user: Any) -> PlaySession:
    """The person always plays the first legal move; returns the finished session."""
    while True:
        session = _wait(session_id, _my_turn)
        if session.status == PlaySession.Status.FINISHED:
            return session
        legal = get_game(session.environment.slug).legal_actions(session.state)
        human_move(session_id, user, legal[0])


def test_starting_a_game_queues_a_session_against_the_playing_revision(make_competitor, make_user):
    comp = make_competitor()
    person = make_user()
    session = start_play_session(person, comp.pk)
    assert session.status == PlaySession.Status.QUEUED
    assert session.revision_id == comp.current_revision_id
    assert session.state == get_game("connect-four").initial_state()
    assert session.human_seat == 0


def test_a_private_competitor_can_be_played_by_its_owner_only(make_competitor, make_user):
    owner = make_user()
    comp = make_competitor(owner=owner, public=False)
    with pytest.raises(ActionError, match="No such competitor"):
        start_play_session(make_user(), comp.pk)
    assert start_play_session(owner, comp.pk).user_id == owner.pk


def test_a_competitor_without_a_playable_revision_cannot_be_played(make_competitor, make_user):
    comp = make_competitor()
    comp.current_revision = None
    comp.save()
    with pytest.raises(ActionError, match="no playable revision"):
        start_play_session(make_user(), comp.pk)


def test_the_agent_replies_and_the_game_is_played_to_the_end(make_competitor, make_user, run_agent):
    person = make_user()
    session = start_play_session(person, make_competitor("random").pk)
    task = run_agent(session.pk)
    human_move_made = _wait(session.pk, _my_turn)
    assert human_move_made.moves == 0  # the person moves first
    sent = time.monotonic()
    human_move(session.pk, person, 3)
    replied = _wait(session.pk, lambda s: s.moves >= 2, timeout=10)
    first_ms = 1000 * (time.monotonic() - sent)
    assert replied.actions[0] == 3 and len(replied.actions) == 2
    assert replied.move_times[0] is None and replied.move_times[1] >= 0  # the agent's time is kept
    sent = time.monotonic()
    human_move(session.pk, person, 3)
    _wait(session.pk, lambda s: s.moves >= 4 or s.status == PlaySession.Status.FINISHED, timeout=10)
    later_ms = 1000 * (time.monotonic() - sent)
    print(f"agent's reply stored {first_ms:.0f} ms (first, agent starting) / {later_ms:.0f} ms after a move")
    finished = _play_to_the_end(session.pk, person)
    assert task.join() == "finished"
    assert finished.result in (
        PlaySession.Result.HUMAN_WIN,
        PlaySession.Result.AGENT_WIN,
        PlaySession.Result.DRAW,
    )


def test_the_stored_game_replays_with_the_rules_and_is_unrated(make_competitor, make_user, run_agent):
    person = make_user()
    comp = make_competitor("random", env="tic-tac-toe")
    session = start_play_session(person, comp.pk, human_first=False)
    task = run_agent(session.pk)
    finished = _play_to_the_end(session.pk, person)
    task.join()
    game = get_game("tic-tac-toe")
    state = game.initial_state()
    for action, stored in zip(finished.actions, finished.states, strict=True):
        state = game.apply(state, action)
        assert state == stored
    assert game.is_over(state) and state == finished.state
    winner = game.winner(state)
    expected = (
        PlaySession.Result.DRAW
        if winner is None
        else PlaySession.Result.HUMAN_WIN
        if winner == finished.human_seat
        else PlaySession.Result.AGENT_WIN
    )
    assert finished.result == expected
    assert (
        finished.human_seat == 1 and finished.actions and finished.move_times[0] is not None
    )  # agent opened
    assert not Duel.objects.exists() and not Rating.objects.exists()  # nothing for the ratings to consume


def test_illegal_moves_are_refused_with_a_message(make_competitor, make_user, run_agent):
    person = make_user()
    session = start_play_session(person, make_competitor("random", env="tic-tac-toe").pk)
    with pytest.raises(IllegalMoveError, match="still starting"):
        human_move(session.pk, person, 0)
    task = run_agent(session.pk)
    _wait(session.pk, _my_turn)
    with pytest.raises(IllegalMoveError, match="Illegal move"):
        human_move(session.pk, person, 9)
    with pytest.raises(IllegalMoveError, match="whole number"):
        human_move(session.pk, person, "4")
    with pytest.raises(IllegalMoveError, match="someone else's"):
        human_move(session.pk, make_user(), 4)
    human_move(session.pk, person, 4)
    with pytest.raises(IllegalMoveError, match=r"Illegal move|agent's turn"):
        human_move(session.pk, person, 4)  # taken (or not my turn yet)
    after = _wait(session.pk, lambda s: s.moves == 2)
    with pytest.raises(IllegalMoveError, match="Illegal move"):
        human_move(session.pk, person, after.actions[1])  # the agent's cell
    assert PlaySession.objects.get(pk=session.pk).moves == 2  # refused moves changed nothing
    _play_to_the_end(session.pk, person)
    task.join()


def test_a_person_who_walks_away_frees_the_agent(make_competitor, make_user, run_agent, settings):
    settings.PLAY_INACTIVITY_SECONDS = 1
    person = make_user()
    session = start_play_session(person, make_competitor("random").pk)
    task = run_agent(session.pk)
    assert task.join(timeout=30) == "abandoned"
    ended = PlaySession.objects.get(pk=session.pk)
    assert ended.status == PlaySession.Status.FINISHED and ended.result == PlaySession.Result.ABANDONED
    assert "No move for 1 s" in ended.error_msg
    with pytest.raises(IllegalMoveError, match="over"):
        human_move(session.pk, person, 0)


def test_an_illegal_agent_move_ends_the_game_and_the_person_wins(make_competitor, make_user, run_agent):
    person = make_user()
    comp = make_competitor("broken/illegal_action", env="tic-tac-toe")
    session = start_play_session(person, comp.pk, human_first=False)
    task = run_agent(session.pk)
    assert task.join(timeout=30) == "agent error"
    ended = PlaySession.objects.get(pk=session.pk)
    assert ended.result == PlaySession.Result.AGENT_ERROR and ended.error_kind == "INVALID_ACTION"
    assert "not a legal action" in ended.error_msg and ended.moves == 0


def test_an_agent_past_the_move_deadline_loses_by_timeout(make_competitor, make_user, run_agent):
    person = make_user()
    comp = make_competitor("broken/sleeps_past_deadline", env="tic-tac-toe")  # sleeps at its 2nd move
    session = start_play_session(person, comp.pk, human_first=False)
    task = run_agent(session.pk)
    opened = _wait(session.pk, _my_turn)
    human_move(session.pk, person, get_game("tic-tac-toe").legal_actions(opened.state)[0])
    started = time.monotonic()
    assert task.join(timeout=30) == "agent error"
    print(f"timeout detected and agent removed {time.monotonic() - started:.2f} s after the human's move")
    ended = PlaySession.objects.get(pk=session.pk)
    assert ended.result == PlaySession.Result.AGENT_ERROR and ended.error_kind == "TIMEOUT"
    assert ended.moves == 2 and "move 3" in ended.error_msg


def test_a_second_delivery_of_the_task_does_nothing(make_competitor, make_user, run_agent, settings):
    settings.PLAY_INACTIVITY_SECONDS = 1
    session = start_play_session(make_user(), make_competitor("random").pk)
    first = run_agent(session.pk)
    _wait(session.pk, lambda s: s.status == PlaySession.Status.PLAYING)
    assert run_agent(session.pk).join() == "not claimed"
    assert first.join(timeout=30) == "abandoned"


def test_the_reaper_closes_games_nobody_drives(make_competitor, make_user):
    from datetime import timedelta

    from django.utils import timezone

    from duel_runner.reaper import reap

    lost = start_play_session(make_user(), make_competitor().pk)  # its worker died: nobody moves it
    fresh = start_play_session(make_user(), make_competitor().pk)
    PlaySession.objects.filter(pk=lost.pk).update(last_activity_at=timezone.now() - timedelta(hours=1))
    assert reap()["stale_play_sessions"] == 1
    assert PlaySession.objects.get(pk=lost.pk).result == PlaySession.Result.FAILED
    assert PlaySession.objects.get(pk=fresh.pk).status == PlaySession.Status.QUEUED


FAKETIME_LIB = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")


def _database_url() -> str:
    """This test database's URL, for a subprocess."""
    from django.db import connection

    s = connection.settings_dict
    if connection.vendor == "postgresql":
        auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
        return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    return "sqlite:///" + str(Path(s["NAME"]).resolve())


@pytest.mark.django_db(transaction=True)
def test_a_reaper_whose_clock_runs_20_minutes_fast_closes_no_live_game(make_competitor, make_user, settings):
    """Idle games are found with the database's clock: a reaper process whose clock is wrong closes only
    the games nobody has driven for real."""
    from django.db import connection
    from django.db.models.functions import Now

    from core.actions.jobs import db_in

    if connection.vendor != "postgresql":
        pytest.skip("SQLite's clock is the reading process's own: only a server has a clock of its own")
    if not FAKETIME_LIB.exists():
        pytest.fail(f"{FAKETIME_LIB} is missing: run_tests.sh installs Debian's faketime package")
    live = start_play_session(make_user(), make_competitor().pk)
    forgotten = start_play_session(make_user(), make_competitor().pk)
    PlaySession.objects.filter(pk=live.pk).update(last_activity_at=Now())
    PlaySession.objects.filter(pk=forgotten.pk).update(last_activity_at=db_in(-3600))
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "core.settings",
        "DATABASE_URL": _database_url(),
        "DATA_DIR": str(settings.DATA_DIR),
        "SANDBOX": "local",
        "SECRET_KEY": "test-secret-key-" + "x" * 40,
        "CELERY_BROKER_URL": "memory://",
        "LD_PRELOAD": str(FAKETIME_LIB),
        "FAKETIME": "+20m",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }
    script = (
        "import time, django; django.setup()\n"
        "from duel_runner.reaper import reap\n"
        "print(time.time(), reap()['stale_play_sessions'])\n"
    )
    skewed = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert skewed.returncode == 0, skewed.stderr[-3000:]
    clock, closed = skewed.stdout.split()[-2:]
    assert float(clock) - time.time() > 19 * 60  # the reaper really lived 20 minutes ahead
    assert PlaySession.objects.get(pk=live.pk).status == PlaySession.Status.QUEUED
    assert PlaySession.objects.get(pk=forgotten.pk).result == PlaySession.Result.FAILED
    assert closed == "1"
