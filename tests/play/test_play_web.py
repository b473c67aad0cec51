"""The play and challenge pages and the challenge API (Django test client, no worker)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from core.models import Duel, PlaySession

pytestmark = pytest.mark.django_db


@pytest.fixture
def me(make_user):
    return make_user()


@pytest.fixture
def my_client(client, me):
    client.force_login(me)
    return client


def test_the_competitor_page_offers_play_and_challenge(my_client, me, make_competitor):
    make_competitor(owner=me, name="mine")
    theirs = make_competitor(name="theirs")
    page = my_client.get(reverse("web:competitor", args=[theirs.pk])).content.decode()
    assert 'data-testid="play-button"' in page and 'data-testid="challenge-button"' in page
    assert ">mine</option>" in page and "5 of 5 left today" in page


def test_a_private_competitor_page_offers_nothing_to_others(my_client, make_competitor):
    theirs = make_competitor(public=False)
    page = my_client.get(reverse("web:competitor", args=[theirs.pk])).content.decode()
    assert "only its owner can play" in page and 'data-testid="play-button"' not in page
    response = my_client.post(reverse("web:play-start", args=[theirs.pk]))
    assert response.status_code == 302 and not PlaySession.objects.exists()


def test_anonymous_visitors_are_asked_to_sign_in(client, make_competitor):
    comp = make_competitor()
    assert "to play against" in client.get(reverse("web:competitor", args=[comp.pk])).content.decode()
    response = client.post(reverse("web:play-start", args=[comp.pk]))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_starting_a_game_opens_the_board(my_client, make_competitor):
    comp = make_competitor()
    response = my_client.post(reverse("web:play-start", args=[comp.pk]), {"first": "human"})
    session = PlaySession.objects.get()
    assert response["Location"] == reverse("web:play", args=[session.pk])
    page = my_client.get(response["Location"]).content.decode()
    assert "data-play" in page and "games/connect-four/renderer.js" in page
    state = my_client.get(reverse("web:play-state", args=[session.pk])).json()
    assert state["status"] == "QUEUED" and state["your_turn"] is False


def test_a_refused_move_returns_the_reason(my_client, me, make_competitor):
    from core.actions.play import claim_play_session

    session = PlaySession.objects.get(
        pk=my_client.post(reverse("web:play-start", args=[make_competitor().pk])).url.split("/")[-2]
    )
    claim_play_session(session.pk, "test")
    url = reverse("web:play-move", args=[session.pk])
    bad = my_client.post(url, {"action": 7}, content_type="application/json")
    assert bad.status_code == 400 and "Illegal move" in bad.json()["error"]
    assert my_client.post(url, {"action": True}, content_type="application/json").status_code == 400
    good = my_client.post(url, {"action": 3}, content_type="application/json")
    assert good.status_code == 200 and good.json()["moves"] == 1 and good.json()["your_turn"] is False
    again = my_client.post(url, {"action": 3}, content_type="application/json")
    assert again.status_code == 400 and "agent's turn" in again.json()["error"]


def test_a_challenge_from_the_page_leads_to_the_live_duel_page(my_client, me, make_competitor):
    mine, theirs = make_competitor(owner=me), make_competitor()
    response = my_client.post(reverse("web:challenge", args=[theirs.pk]), {"challenger": mine.pk})
    duel = Duel.objects.get()
    assert response["Location"] == reverse("web:duel", args=[duel.pk])
    assert 'data-testid="duel-live"' in my_client.get(response["Location"]).content.decode()


def test_the_api_queues_challenges_until_the_daily_limit(my_client, me, make_competitor, settings):
    settings.CHALLENGES_PER_DAY = 1
    mine, theirs = make_competitor(owner=me), make_competitor()
    url = reverse("web:api:challenge-list")
    body = {"challenger": mine.pk, "opponent": theirs.pk}
    created = my_client.post(url, body, content_type="application/json")
    assert created.status_code == 201 and created.json()["id"] == Duel.objects.get().pk
    assert my_client.post(url, body, content_type="application/json").status_code == 429
    swapped = my_client.post(
        url, {"challenger": theirs.pk, "opponent": mine.pk}, content_type="application/json"
    )
    assert swapped.status_code in (400, 429)


def test_the_api_refuses_a_challenge_with_someone_elses_competitor(my_client, make_competitor):
    url = reverse("web:api:challenge-list")
    body = {"challenger": make_competitor().pk, "opponent": make_competitor().pk}
    refused = my_client.post(url, body, content_type="application/json")
    assert refused.status_code == 400 and "your own" in refused.json()["detail"]


def test_the_api_needs_a_signed_in_user(client, make_competitor):
    body = {"challenger": make_competitor().pk, "opponent": make_competitor().pk}
    response = client.post(reverse("web:api:challenge-list"), body, content_type="application/json")
    assert response.status_code in (401, 403)


def test_a_second_play_click_returns_to_the_running_game(my_client, me, make_competitor, make_user):
    comp, other = make_competitor(), make_competitor(name="other")
    first = my_client.post(reverse("web:play-start", args=[comp.pk]), {"first": "human"})
    again = my_client.post(reverse("web:play-start", args=[comp.pk]), {"first": "agent"}, follow=True)
    session = PlaySession.objects.get()
    assert first["Location"] == again.redirect_chain[-1][0] == reverse("web:play", args=[session.pk])
    assert "You already have a live game against this agent" in again.content.decode()
    # Another opponent, or another person, gets a game of their own.
    my_client.post(reverse("web:play-start", args=[other.pk]))
    someone = Client()
    someone.force_login(make_user())
    someone.post(reverse("web:play-start", args=[comp.pk]))
    assert PlaySession.objects.count() == 3
    # Once the game is over, "Play against" opens a new one.
    my_client.post(reverse("web:play-end", args=[session.pk]))
    my_client.post(reverse("web:play-start", args=[comp.pk]))
    assert PlaySession.objects.filter(user=me).count() == 3


def test_the_live_games_list_ends_a_game(my_client, me, make_competitor):
    comp, other = make_competitor(name="alpha-bot"), make_competitor(name="beta-bot")
    for c in (comp, other):
        my_client.post(reverse("web:play-start", args=[c.pk]))
    games = list(PlaySession.objects.order_by("pk"))
    page = my_client.get(reverse("web:live-games")).content.decode()
    assert page.count('data-testid="live-game-row"') == 2 and "alpha-bot" in page and "beta-bot" in page
    response = my_client.post(reverse("web:play-end", args=[games[0].pk]), follow=True)
    page = response.content.decode()
    assert f"Live game {games[0].pk} ended." in page and page.count('data-testid="live-game-row"') == 1
    games[0].refresh_from_db()
    assert games[0].status == "FINISHED" and games[0].result == "ABANDONED" and games[0].error_kind == "ENDED"
    state = my_client.get(reverse("web:play-state", args=[games[0].pk])).json()
    assert state["result_display"] == "You ended the game."
    assert state["error_msg"] == "The player ended the game and the agent stopped."
    # Nobody else ends someone's game; visitors are sent to sign in.
    stranger = Client()
    stranger.force_login(comp.owner)
    assert stranger.post(reverse("web:play-end", args=[games[1].pk])).status_code == 404
    assert Client().post(reverse("web:play-end", args=[games[1].pk])).status_code == 302
    games[1].refresh_from_db()
    assert games[1].status != "FINISHED"
    my_client.post(reverse("web:play-end", args=[games[1].pk]))
    assert 'data-testid="no-live-games"' in my_client.get(reverse("web:live-games")).content.decode()


def test_without_javascript_the_person_moves_with_the_pages_buttons(my_client, make_competitor):
    from core.actions.play import claim_play_session

    comp = make_competitor()
    session = PlaySession.objects.get(
        pk=my_client.post(reverse("web:play-start", args=[comp.pk])).url.split("/")[-2]
    )
    claim_play_session(session.pk, "test")
    page = my_client.get(reverse("web:play", args=[session.pk])).content.decode()
    assert 'data-testid="play-plain-moves"' in page and page.count('name="action" value=') == 7
    url = reverse("web:play-move", args=[session.pk])
    moved = my_client.post(url, {"action": "3"}, follow=True)  # a plain form post: the page comes back
    assert moved.redirect_chain[-1][0] == reverse("web:play", args=[session.pk])
    session.refresh_from_db()
    assert session.actions == [3] and 'data-testid="play-plain-moves"' not in moved.content.decode()
    refused = my_client.post(url, {"action": "3"}, follow=True).content.decode()
    assert "agent&#x27;s turn" in refused or "agent's turn" in refused
