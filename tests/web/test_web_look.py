"""Game boards (issue 32 item 6): every game ships a sample position its card and page can draw; once a duel
is played they draw its last match's final position instead (one query for every card), with the game's
renderer."""

from __future__ import annotations

import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from environments import get_game
from environments.registry import all_slugs, static_dir
from tests.web import factories
from web.game_boards import boards, sample_position

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("slug", all_slugs())
def test_every_game_with_a_renderer_has_a_sample_position_in_play(slug: str) -> None:
    if not (static_dir(slug) / "renderer.js").exists():
        assert sample_position(slug) is None  # nothing to draw it with: no board on its card
        return
    state = sample_position(slug)
    assert state is not None
    assert not get_game(slug).is_over(state)  # pieces on the board, not the final position


def test_an_unknown_game_has_no_sample_board() -> None:
    assert sample_position("no-such-game") is None
    assert boards(["connect-four", "no-such-game"]).keys() == {"connect-four"}


def _boards(page: str) -> dict:
    found = re.search(r'<script id="sample-boards" type="application/json">(.*?)</script>', page, re.S)
    assert found, "no sample boards on the page"
    return json.loads(found.group(1))


def test_home_cards_and_the_game_page_carry_the_board(client, env) -> None:
    with CaptureQueriesContext(connection) as home_queries:
        page = client.get("/").content.decode()
    assert 'data-sample-board data-game="connect-four"' in page
    assert "/static/games/connect-four/renderer.js" in page and "/static/web/js/boards.js" in page
    board = _boards(page)["connect-four"]
    assert board["state"] == sample_position("connect-four") and board["sample"]
    assert not any("sample" in q["sql"] for q in home_queries.captured_queries)
    page = client.get("/games/connect-four/").content.decode()
    assert 'data-testid="game-board"' in page and list(_boards(page)) == ["connect-four"]
    assert "A position from a sample game" in page


def test_once_a_duel_is_played_the_boards_show_its_last_match(client, env, alice, bob) -> None:
    """The cards and the game page draw the final position of the latest duel's last match, named and
    linked to its replay; the home page finds every game's in one query, however many duels there are."""
    one, two = factories.competitor(alice, env, "one"), factories.competitor(bob, env, "two")
    factories.duel(one, two, num_matches=2)
    latest = factories.duel(two, one, num_matches=3)
    last = latest.matches.order_by("-index").first()
    with CaptureQueriesContext(connection) as with_duels:
        page = client.get("/").content.decode()
    board = _boards(page)["connect-four"]
    assert board["state"] == last.states[-1] and "sample" not in board
    assert board["players"] == ["two", "one"] and board["first_player"] == last.first_player
    assert board["url"] == f"/matches/{last.pk}/"
    page = client.get("/games/connect-four/").content.decode()
    assert f'<a href="/matches/{last.pk}/">watch its replay</a>' in page and "two vs one" in page
    factories.duel(one, two, num_matches=2)
    with CaptureQueriesContext(connection) as more_duels:
        client.get("/")
    assert len(more_duels.captured_queries) == len(with_duels.captured_queries)


def test_a_fresh_home_page_says_how_to_start_instead_of_an_empty_box(client, env) -> None:
    page = client.get("/").content.decode()
    assert 'data-testid="first-steps"' in page and "No duel has been played yet." in page
    assert 'data-testid="duel-list"' not in page
