"""What a new user read wrong (issue 32): errors that rewrote the user's own words or vanished, durations
and file names mangled, URL templates that ate the host, a data-folder remark for an agent that never used
its folder, "user-3" as a name and "the human won" as a sentence. Each test failed before its fix."""

from __future__ import annotations

import io
import re
import zipfile

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from core.actions.api_tokens import create_api_token
from core.models import Build, PlaySession, Revision, SmokeTest, StoredAgentData
from core.models.user import default_public_name
from tests.web import factories
from tests.web.factories import PASSWORD
from web.logtext import explain_error
from web.views.upload import _sentence

pytestmark = pytest.mark.django_db

#: What the referee stores today when an agent raises (``run_duel.seat``, ``run_duel.api``): its own header
#: line, then the agent's traceback, whose last line is the user's own message.
REFEREE_CRASH = (
    "match 1 of 4: CRASH: PLAYER_1 raised RuntimeError at its move 2 (move 3 of the match):\n"
    "Traceback (most recent call last):\n"
    '  File "/agent/player.py", line 9, in step\n'
    "    if me == PLAYER_2: raise RuntimeError('boom at move 3')\n"
    "RuntimeError: boom at move 3"
)


# --- errors: the user's words stay theirs ------------------------------------------------------------------


def test_the_users_own_traceback_is_never_rewritten():
    text = explain_error(REFEREE_CRASH, ("mine", "theirs"))
    head, _, rest = text.partition("\n")
    assert head == (
        "match 1 of 4: CRASH: mine (player 1) raised RuntimeError at its move 2 (move 3 of the match):"
    )
    assert rest == REFEREE_CRASH.partition("\n")[2]  # "boom at move 3" and "PLAYER_2" as the user wrote them
    # Rows stored before the referee wrote both counts get the clarification, in its header only.
    old = "PLAYER_2 raised ValueError at move 4:\nValueError: bad at move 4 of my plan\n\nAlso PLAYER_1: stop"
    assert explain_error(old, ("a", "b")) == (
        "b (player 2) raised ValueError at move 4 of the match (its 2nd move):\n"
        "ValueError: bad at move 4 of my plan\n\nAlso a (player 1): stop"
    )


def test_the_revision_page_and_the_notification_show_the_traceback_as_written(client, alice, env):
    comp = factories.competitor(alice, env, "crashy", state=Revision.State.TEST_FAILED)
    rev = comp.revisions.get()
    Revision.objects.filter(pk=rev.pk).update(error_message=f"smoke test failed: {REFEREE_CRASH}")
    alice.notifications.create(
        kind="REVISION_FAILED", object_key=f"rev:{rev.pk}", subject="crashy v1 failed", body=REFEREE_CRASH
    )
    client.force_login(alice)
    for url in (reverse("web:revision", args=[rev.pk]), reverse("web:notifications")):
        html = client.get(url).content.decode()
        assert "RuntimeError: boom at move 3\n" in html or html.count("RuntimeError: boom at move 3<") == 1
        assert "boom at move 3 of the match" not in html
        assert "(its 2nd move)" not in html


def test_the_api_gives_the_owner_the_failure_of_a_failed_build_and_smoke_test(alice, bob, env):
    failed_build = factories.competitor(alice, env, "nobuild", state=Revision.State.BUILD_FAILED)
    failed_test = factories.competitor(alice, env, "notest", state=Revision.State.TEST_FAILED)
    owner, other, token = Client(), Client(), Client()
    owner.force_login(alice)
    key, _ = create_api_token(alice, label="test")
    token.defaults["HTTP_AUTHORIZATION"] = f"Token {key}"
    other.force_login(bob)
    for comp, expected in ((failed_build, "nosuchpackage"), (failed_test, "INVALID_ACTION")):
        rev = comp.revisions.get()
        url = reverse("web:api:revision-detail", args=[rev.pk])
        mine = owner.get(url).json()
        assert expected in mine["failure"], mine
        assert other.get(url).json()["failure"] is None
        assert Client().get(url).json()["failure"] is None
        listed = owner.get(reverse("web:api:revision-list")).json()["results"]
        assert expected in next(r for r in listed if r["id"] == rev.pk)["failure"]
        # As the rl-arena client asks: with an API token, after an anonymous read of the same URL.
        assert token.get(url).json()["failure"] == mine["failure"]
        assert token.get(url, HTTP_ACCEPT="application/json").json()["failure"] == mine["failure"]
    # A failure whose reason only its build or smoke test kept: the API says what the page says.
    for comp, expected in ((failed_build, "pip exited with status 1"), (failed_test, "returned 9")):
        rev = comp.revisions.get()
        Revision.objects.filter(pk=rev.pk).update(error_message="")
        Build.objects.filter(revision=rev).update(error="pip exited with status 1")
        SmokeTest.objects.filter(revision=rev).update(reason="the agent returned 9")
        url = reverse("web:api:revision-detail", args=[rev.pk])
        assert expected in owner.get(url).json()["failure"]
        assert expected in owner.get(reverse("web:revision", args=[rev.pk])).content.decode()
        assert other.get(url).json()["failure"] is None
    ok = factories.competitor(alice, env, "fine").revisions.get()
    assert owner.get(reverse("web:api:revision-detail", args=[ok.pk])).json()["failure"] is None


def test_the_api_root_keeps_the_host_and_port_in_its_url_templates(db, settings):
    """Only ever tested on "testserver": on 127.0.0.1:8000 every "1" became "{id}", the host's too."""
    client = Client(SERVER_NAME="127.0.0.1", SERVER_PORT="8000")
    data = client.get("/api/", HTTP_HOST="127.0.0.1:8000").json()
    assert data["competitor"] == "http://127.0.0.1:8000/api/competitors/{id}/"
    assert data["revision_logs"] == "http://127.0.0.1:8000/api/revisions/{id}/logs/"
    assert data["match_replay"].startswith("http://127.0.0.1:8000/api/matches/{id}/")
    assert data["leaderboard"].startswith("http://127.0.0.1:8000/api/environments/{slug}/")
    for key, value in data.items():
        if isinstance(value, str):
            assert value.startswith("http://127.0.0.1:8000/"), (key, value)
    # A host holding the example's letters is left alone too.
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "connect-four.example"]
    data = Client().get("/api/", HTTP_HOST="connect-four.example:8000").json()
    assert data["environment"] == "http://connect-four.example:8000/api/environments/{slug}/"


def test_a_missing_player_py_reads_as_a_sentence_with_the_files_name_as_it_is(alice_client, env):
    assert _sentence("player.py is missing: the zip must contain player.py") == (
        "The file player.py is missing: the zip must contain player.py"
    )
    assert _sentence("the zip is empty") == "The zip is empty"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("helper.py", "x = 1\n")
    upload = SimpleUploadedFile("agent.zip", buf.getvalue(), content_type="application/zip")
    response = alice_client.post(
        reverse("web:upload"), {"environment": env.slug, "name": "nofile", "file": upload}
    )
    html = response.content.decode()
    assert "player.py is missing" in html, html[-3000:]
    assert "Player.py" not in html


# --- the data folder of a newcomer ---------------------------------------------------------------------


def _data_row(comp, **fields):
    defaults = {"generation": 1, "last_problem_at": timezone.now()}
    return StoredAgentData.objects.create(competitor=comp, **{**defaults, **fields})


def test_a_newcomer_who_never_used_the_data_folder_reads_no_problem_about_it(client, alice, env):
    comp = factories.competitor(alice, env, "starter")
    _data_row(
        comp,
        last_problem="duel 57: your agent was not running at the end of the duel (it failed to start, "
        "crashed or ran out of time or memory), so its data folder keeps what it had before this duel",
    )
    client.force_login(alice)
    html = client.get(reverse("web:competitor", args=[comp.pk])).content.decode()
    assert 'data-testid="stored-data"' in html
    assert 'data-testid="data-problem"' not in html and "Last problem" not in html
    # An agent that keeps files reads it; and a refused folder is news even when nothing is stored.
    StoredAgentData.objects.filter(competitor=comp).update(size_bytes=10, files=1)
    html = client.get(reverse("web:competitor", args=[comp.pk])).content.decode()
    assert 'data-testid="data-problem">Duel 57: your agent was not running' in html
    StoredAgentData.objects.filter(competitor=comp).update(
        size_bytes=0, files=0, last_problem="duel 58: the folder it left was refused (over 10 MB)"
    )
    html = client.get(reverse("web:competitor", args=[comp.pk])).content.decode()
    assert "Duel 58: the folder it left was refused" in html


def test_two_overlapping_duels_of_an_agent_with_an_empty_folder_note_nothing(env, alice):
    from core.actions import claim_duel, load_agent_data, save_agent_data, schedule_duel
    from core.actions.jobs import Claim
    from run_duel.agent_data import archive_of

    mine, other = factories.competitor(alice, env, "quiet"), factories.competitor(alice, env, "other")
    Revision.objects.filter(competitor__in=[mine, other]).update(agent_ref="local:test")
    first = schedule_duel(mine.current_revision, other.current_revision)
    second = schedule_duel(mine.current_revision, other.current_revision)
    claim_1 = Claim.of(claim_duel(first.pk, "w1"))
    claim_2 = Claim.of(claim_duel(second.pk, "w2"))
    generation = load_agent_data(mine.pk)[1]  # both read it before playing
    assert save_agent_data(claim_1, mine.pk, generation, archive_of({}), first.pk)
    assert not save_agent_data(claim_2, mine.pk, generation, archive_of({}), second.pk)
    assert StoredAgentData.objects.get(competitor=mine).last_problem == ""  # nothing was lost
    # Files left by the later duel are lost: that is said, plainly.
    assert not save_agent_data(claim_2, mine.pk, generation, archive_of({"a": b"1"}), second.pk)
    problem = StoredAgentData.objects.get(competitor=mine).last_problem
    assert problem.startswith(f"duel {second.pk}: the files your agent left in its data folder were not kept")


# --- names ------------------------------------------------------------------------------------------------


def _signup(client, **extra):
    data = {"email": "new@example.com", "password1": PASSWORD, "password2": PASSWORD, **extra}
    return client.post(reverse("web:signup"), data)


def test_a_user_without_a_display_name_is_called_by_their_github_name_or_a_friendly_one(client, env):
    assert _signup(client, github="octo-cat").status_code == 302
    user = get_user_model().objects.get(email="new@example.com")
    assert user.public_name == "octo-cat"
    html = client.get(reverse("web:home")).content.decode()
    assert ">octo-cat</a>" in html  # the header
    plain = get_user_model().objects.create_user("plain@example.com", PASSWORD)
    name = plain.public_name
    assert name == default_public_name(plain.pk) and re.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z]+ \d+", name)
    assert "user-" not in name and "plain" not in name
    comp = factories.competitor(plain, env, "anon")
    page = Client().get(reverse("web:competitor", args=[comp.pk])).content.decode()
    assert f"by <strong>{name}</strong>" in page
    names = {default_public_name(pk) for pk in range(1, 200)}
    assert len(names) == 199


def test_the_github_name_given_at_sign_up_is_checked_like_the_profiles(client, db):
    response = _signup(client, github="me@example.com")  # would have become the public name
    assert response.status_code == 400
    assert "Not a valid GitHub user name." in response.content.decode()


def test_a_finished_live_game_says_who_won_in_a_sentence(client, alice, bob, env):
    from web.views.play import session_json

    comp = factories.competitor(bob, env, "opponent")
    session = PlaySession.objects.create(
        user=alice,
        environment=env,
        revision=comp.current_revision,
        status=PlaySession.Status.FINISHED,
        result=PlaySession.Result.HUMAN_WIN,
        state={},
        last_activity_at=timezone.now(),
    )
    session = PlaySession.objects.select_related("environment", "user", "revision__competitor__owner").get(
        pk=session.pk
    )
    assert session_json(session, alice)["result_display"] == "You won."
    assert session_json(session, bob)["result_display"] == "Alice won."
    session.result = PlaySession.Result.AGENT_WIN
    assert session_json(session, alice)["result_display"] == "opponent v1 won."
    session.result = PlaySession.Result.AGENT_ERROR
    assert session_json(session, alice)["result_display"] == "opponent v1 broke the rules, so you win."
    for result in PlaySession.Result:
        session.result = result
        text = session_json(session, bob)["result_display"]
        assert text.endswith(".") and "human" not in text


def test_without_javascript_the_play_page_and_the_revision_panel_say_what_to_do(client, alice, bob, env):
    comp = factories.competitor(bob, env, "opponent")
    session = PlaySession.objects.create(
        user=alice,
        environment=env,
        revision=comp.current_revision,
        status=PlaySession.Status.FINISHED,
        result=PlaySession.Result.AGENT_WIN,
        state={},
        last_activity_at=timezone.now(),
    )
    client.force_login(alice)
    html = client.get(reverse("web:play", args=[session.pk])).content.decode()
    notice = re.search(r'<noscript><p class="failure" data-testid="play-noscript">(.*?)</p>', html, re.S)
    assert "Game over. opponent v1 won." in notice.group(1) and "Reload" in notice.group(1)
    building = factories.competitor(alice, env, "building", state=Revision.State.BUILDING).revisions.get()
    page = client.get(reverse("web:revision", args=[building.pk])).content.decode()
    assert re.search(r'data-testid="revision-noscript">[^<]*<a href="">reload the page</a>', page)
