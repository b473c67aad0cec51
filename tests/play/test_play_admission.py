"""Doors: one person cannot take every live-game worker. Past ``PLAY_MAX_LIVE_PER_USER`` running games a new
game waits (QUEUED, no hint sent, a worker that gets it anyway refuses it) and starts, in order, when one of
the person's games ends. Real task (``duel_runner.play_session`` in threads), local sandbox, and the hints
read back from a real Redis broker."""

from __future__ import annotations

import base64
import json
import os
import time
from datetime import timedelta
from typing import Any

import pytest
from django.db.models.functions import Now
from django.test import Client

from core.actions.play import abandon_stale_play_sessions, end_play_session, start_play_session
from core.models import PlaySession

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


@pytest.fixture
def broker(settings: Any) -> Any:
    """Task hints go to a real Redis (emptied first); returns a function listing the live-game ids hinted
    since the last call."""
    redis = pytest.importorskip("redis")
    from core.celery import app

    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.exceptions.ConnectionError:
        pytest.skip(f"no Redis at {REDIS_URL}")
    client.flushdb()
    app.conf.broker_url = REDIS_URL
    app._pool = None
    app.amqp._producer_pool = None
    queue = settings.CELERY_TASK_DEFAULT_QUEUE

    def hinted() -> set[int]:
        ids = set()
        while (raw := client.lpop(queue)) is not None:
            message = json.loads(raw)
            if message["headers"]["task"] == PlaySession.task_name:
                args = json.loads(base64.b64decode(message["body"]))[0]
                ids.add(int(args[0]))
        return ids

    yield hinted
    client.flushdb()


def _wait_for(session_id: int, status: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while PlaySession.objects.get(pk=session_id).status != status:
        if time.monotonic() > deadline:
            pytest.fail(f"game {session_id} never reached {status}")
        time.sleep(0.05)


def test_a_person_past_the_cap_waits_for_one_of_their_games_to_end(
    make_competitor, make_user, run_agent, broker, settings
):
    settings.PLAY_MAX_LIVE_PER_USER = 2
    person, other = make_user(), make_user()
    # One live game per opponent: the person opens three games against three agents.
    agents = [make_competitor("random", name=f"random-{i}") for i in range(3)]
    agent = agents[0]
    games = [start_play_session(person, a.pk).pk for a in agents]
    assert broker() == set(games[:2])  # the third game's hint is held back
    # A second "Play against" the same agent is the running game: nothing new is opened or hinted.
    assert start_play_session(person, agent.pk).pk == games[0] and broker() == set()
    assert PlaySession.objects.filter(user=person).count() == 3
    # A worker that gets the third game anyway (a duplicate hint, a reaper) does not start it.
    assert run_agent(games[2]).join() == "not claimed"
    tasks = [run_agent(game) for game in games[:2]]
    for game in games[:2]:
        _wait_for(game, PlaySession.Status.PLAYING)
    assert PlaySession.objects.get(pk=games[2]).status == PlaySession.Status.QUEUED
    web = Client()
    web.force_login(person)
    state = web.get(f"/play/{games[2]}/state/").json()
    assert state["status"] == "QUEUED" and state["waiting_behind"] == 1
    # Someone else is not held back by this person's games.
    theirs = start_play_session(other, agent.pk).pk
    assert broker() == {theirs}

    # The person's first game ends: the waiting one is admitted and started by a worker.
    assert end_play_session(games[0], PlaySession.Result.ABANDONED, message="closed by the test")
    assert broker() == {games[2]}
    tasks.append(run_agent(games[2]))
    _wait_for(games[2], PlaySession.Status.PLAYING)
    assert web.get(f"/play/{games[2]}/state/").json()["waiting_behind"] == 0
    playing = PlaySession.objects.filter(user=person, status=PlaySession.Status.PLAYING).count()
    assert playing == 2
    for game in (games[1], games[2]):
        end_play_session(game, PlaySession.Result.ABANDONED, message="closed by the test")
    assert [task.join() for task in tasks] == ["finished"] * 3


def test_a_game_waiting_behind_the_cap_is_not_closed_as_abandoned(
    transactional_db, make_competitor, make_user, broker, settings
):
    settings.PLAY_MAX_LIVE_PER_USER = 1
    person = make_user()
    agents = [make_competitor("random", name=f"random-{i}") for i in range(2)]
    first, waiting = (start_play_session(person, a.pk).pk for a in agents)
    assert broker() == {first}
    # Both games sat for an hour: the admitted one lost its worker, the other one was never meant to start.
    PlaySession.objects.filter(pk__in=(first, waiting)).update(last_activity_at=Now() - timedelta(hours=1))

    assert abandon_stale_play_sessions(max_idle_s=60) == 1
    assert PlaySession.objects.get(pk=first).result == PlaySession.Result.FAILED
    assert PlaySession.objects.get(pk=waiting).status == PlaySession.Status.QUEUED
    # Its turn came with the first game's end: hinted, and its idle clock starts now, not an hour ago.
    assert broker() == {waiting}
    assert abandon_stale_play_sessions(max_idle_s=60) == 0
