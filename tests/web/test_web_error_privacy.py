"""Private stays private: an agent's traceback, source lines and stderr reach only its owner and staff.

A real duel is played by the referee (``python -m run_duel``, local sandbox) between Bob's legal agent and
Alice's agent that prints secrets to stderr and crashes with a secret in its source line and exception;
the result is stored through ``core.actions.record_duel_result``. Every public view of it (match page, duel
page and its live fragment, the duel, duel-replays and match-replay API) is then read as a visitor, as Bob
(the opponent's owner), as Alice (the owner) and as staff. A live game Alice's agent lost by erring is read
by Bob (who played it) and Alice; a duel that failed on our side by Alice and staff.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client

from core.actions.play import end_play_session, start_play_session
from core.models import Duel, PlaySession, Revision
from tests.web import factories
from tests.web.privacy_lib import SECRETS, SENTENCE, play_referee_duel, store_crashed_duel

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def referee_json(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A real referee duel, played once for the module."""
    return play_referee_duel(tmp_path_factory.mktemp("referee"))


@pytest.fixture
def crashed(env, alice, bob, referee_json) -> Duel:
    """The referee's duel stored through the duel actions."""
    return store_crashed_duel(env, alice, bob, referee_json)


def _as(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def _public_urls(duel: Duel) -> list[str]:
    match = duel.matches.get(index=0)
    return [
        f"/matches/{match.pk}/",
        f"/duels/{duel.pk}/",
        f"/duels/{duel.pk}/matches/",
        f"/api/duels/{duel.pk}/",
        f"/api/duels/{duel.pk}/replays/",
        f"/api/matches/{match.pk}/replay/",
    ]


def _read(client: Client, url: str) -> str:
    response = client.get(url, HTTP_ACCEPT="application/json" if url.startswith("/api/") else "text/html")
    assert response.status_code == 200, url
    return response.content.decode()


@pytest.mark.parametrize("who", ["visitor", "opponent"])
def test_others_see_the_kind_and_the_platforms_sentence_never_the_agents_output(who, crashed, bob):
    client = _as(None if who == "visitor" else bob)
    for url in _public_urls(crashed):
        body = _read(client, url)
        assert "CRASH" in body, url
        leaked = [s for s in (*SECRETS, "player.py", "Traceback") if s in body]
        assert leaked == [], f"{url} shows {leaked} to the {who}"
    replay = json.loads(_read(client, f"/api/matches/{crashed.matches.get(index=0).pk}/replay/"))
    assert replay["error_msg"].startswith(SENTENCE) and replay["error_detail"] is None
    assert SENTENCE in _read(client, f"/matches/{crashed.matches.get(index=0).pk}/")


@pytest.mark.parametrize("who", ["owner", "staff"])
def test_the_owner_and_staff_read_the_traceback_and_stderr(who, crashed, alice, staff):
    client = _as(alice if who == "owner" else staff)
    match = crashed.matches.get(index=0)
    page = _read(client, f"/matches/{match.pk}/")
    assert SENTENCE in page and 'data-testid="match-error-detail"' in page
    assert all(s in page for s in SECRETS)
    for url in (f"/api/matches/{match.pk}/replay/", f"/api/duels/{crashed.pk}/replays/"):
        data = json.loads(_read(client, url))
        replay = data["matches"][0] if "matches" in data else data
        assert all(s in replay["error_detail"] for s in SECRETS), url
    brief = json.loads(_read(client, f"/api/duels/{crashed.pk}/"))["matches"][0]
    assert brief["error_msg"].startswith(SENTENCE) and "SECRET-EXCEPTION" in brief["error_detail"]


def test_the_other_players_part_of_a_message_stays_with_its_owner(crashed, alice, bob):
    """When both failed, the referee appends the other's error ("Also ..."): each owner reads their own."""
    match = crashed.matches.get(index=0)
    match.error_msg += "\n\nAlso PLAYER_1 raised KeyError: BOB-PRIVATE-TRACE"
    match.save(update_fields=["error_msg"])
    alices = json.loads(_read(_as(alice), f"/api/matches/{match.pk}/replay/"))["error_detail"]
    assert "SECRET-EXCEPTION" in alices and "BOB-PRIVATE-TRACE" not in alices
    assert json.loads(_read(_as(bob), f"/api/matches/{match.pk}/replay/"))["error_detail"] is None


def test_a_duel_that_failed_on_our_side_shows_its_traceback_to_staff_only(env, alice, bob, staff):
    duel = factories.duel(factories.competitor(alice, env, "a"), factories.competitor(bob, env, "b"), 1)
    Duel.objects.filter(pk=duel.pk).update(
        result=Duel.Result.ERROR, error_msg="internal error:\nTraceback ...\nOUR-OWN-TRACE in referee.py"
    )
    for user in (None, alice, bob):
        for url in (f"/duels/{duel.pk}/", f"/api/duels/{duel.pk}/", f"/api/duels/{duel.pk}/replays/"):
            body = _read(_as(user), url)
            assert "OUR-OWN-TRACE" not in body and "error on our side" in body, url
    data = json.loads(_read(_as(staff), f"/api/duels/{duel.pk}/"))
    assert "OUR-OWN-TRACE" in data["error_detail"]
    assert "OUR-OWN-TRACE" in _read(_as(staff), f"/duels/{duel.pk}/")


def test_a_live_game_the_agent_lost_shows_its_error_to_its_owner_not_to_the_person_playing(
    env, alice, bob, staff
):
    leaky = factories.competitor(alice, env, "leaky", is_public=True)
    Revision.objects.filter(pk=leaky.current_revision_id).update(agent_ref="local-folder")
    session = start_play_session(bob, leaky.pk)
    # What duel_runner.live_play stores when the agent raises: the fault and its stderr's last lines.
    message = (
        "leaky raised ValueError at its move 1:\nTraceback (most recent call last):\n"
        '  File "/agent/player.py", line 12, in step\n'
        '    raise ValueError("SECRET-EXCEPTION")  # SECRET-SOURCE-LINE\n'
        "\nLast lines of the agent's stderr:\nSECRET-STDERR-LINE"
    )
    PlaySession.objects.filter(pk=session.pk).update(status=PlaySession.Status.PLAYING)
    assert end_play_session(session.pk, PlaySession.Result.AGENT_ERROR, kind="CRASH", message=message)
    for user in (None, bob):  # a visitor watching, and the person who played
        for url in (f"/play/{session.pk}/state/", f"/play/{session.pk}/"):
            body = _read(_as(user), url)
            assert not [s for s in SECRETS if s in body], url
            assert "crashed (its code raised an exception" in body
    for user in (alice, staff):
        data = json.loads(_read(_as(user), f"/play/{session.pk}/state/"))
        assert all(s in data["error_detail"] for s in SECRETS)
