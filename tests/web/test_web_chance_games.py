"""The site lists Leduc Hold'em and Goofspiel like every game: rules page, starter kit, leaderboard,
replays (starting with the recorded deal) and play in the browser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.urls import reverse

from core.models import PlaySession, Revision
from environments import get_game, get_info
from tests.web import factories

pytestmark = pytest.mark.django_db

NEW_GAMES = ["goofspiel", "leduc-holdem"]
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("slug", NEW_GAMES)
def test_the_game_page_has_rules_starter_kit_and_leaderboard(client, slug):
    env = factories.environment(slug)
    comps = [factories.competitor(env=env, is_public=True) for _ in range(2)]
    html = client.get(reverse("web:game", args=[slug])).content.decode()
    assert get_info(slug).name.replace("'", "&#x27;") in html
    assert "What your player sees" in html  # the rules and the encoding, from info.yml
    assert reverse("web:starter-kit", args=[slug]) in html
    board = client.get(reverse("web:leaderboard", args=[slug])).content.decode()
    assert all(c.name in board for c in comps)


@pytest.mark.parametrize("slug", NEW_GAMES)
def test_a_match_replays_from_its_deal_with_the_games_renderer(client, slug):
    env = factories.environment(slug)
    a, b = (factories.competitor(env=env, is_public=True) for _ in range(2))
    match = factories.duel(a, b, num_matches=2).matches.order_by("index").first()
    html = client.get(reverse("web:match", args=[match.pk])).content.decode()
    assert "renderer.js" in html
    data = client.get(f"/api/matches/{match.pk}/replay/").json()
    game = get_game(slug)
    assert data["states"][0] == game.initial_state(data["states"][0]["seed"])
    assert len(data["states"]) == len(data["moves"]) + 1
    assert all(move["text"] for move in data["moves"])


@pytest.mark.parametrize("slug", NEW_GAMES)
def test_a_person_can_open_a_game_against_a_public_agent(client, slug):
    env = factories.environment(slug)
    comp = factories.competitor(env=env, is_public=True)
    Revision.objects.filter(pk=comp.current_revision_id).update(
        agent_ref=str(REPO / "example_players" / "random")
    )
    person = factories.user()
    client.force_login(person)
    response = client.post(reverse("web:play-start", args=[comp.pk]))
    session = PlaySession.objects.get(user=person)
    assert response.status_code == 302 and response["Location"] == reverse("web:play", args=[session.pk])
    page = client.get(reverse("web:play", args=[session.pk])).content.decode()
    assert "renderer.js" in page
    state = client.get(reverse("web:play-state", args=[session.pk])).json()["state"]
    assert json.dumps(state)  # the view of the person's seat (hidden parts null while running)
    assert state == game_view(slug, session)


def game_view(slug: str, session: PlaySession) -> dict:
    """What the person may see of the stored state: everything once over, its own view before."""
    game = get_game(slug)
    if session.status == PlaySession.Status.PLAYING and not game.is_over(session.state):
        return game.redact(session.state, session.human_seat)
    return session.state
