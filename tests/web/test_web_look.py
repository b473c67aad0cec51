"""Sample boards (issue 32 item 6): every game ships a position its card and page can draw, the home and
game pages carry it with the game's renderer, and they ask the database nothing more for it."""

from __future__ import annotations

import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from environments import get_game
from environments.registry import all_slugs, static_dir
from web.game_boards import sample_boards, sample_position

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
    assert sample_boards(["connect-four", "no-such-game"]).keys() == {"connect-four"}


def _boards(page: str) -> dict:
    found = re.search(r'<script id="sample-boards" type="application/json">(.*?)</script>', page, re.S)
    assert found, "no sample boards on the page"
    return json.loads(found.group(1))


def test_home_cards_and_the_game_page_carry_the_board(client, env) -> None:
    with CaptureQueriesContext(connection) as home_queries:
        page = client.get("/").content.decode()
    assert 'data-sample-board data-game="connect-four"' in page
    assert "/static/games/connect-four/renderer.js" in page and "/static/web/js/boards.js" in page
    assert _boards(page)["connect-four"] == sample_position("connect-four")
    assert not any("sample" in q["sql"] for q in home_queries.captured_queries)
    page = client.get("/games/connect-four/").content.decode()
    assert 'data-testid="game-board"' in page and list(_boards(page)) == ["connect-four"]


def test_a_fresh_home_page_says_how_to_start_instead_of_an_empty_box(client, env) -> None:
    page = client.get("/").content.decode()
    assert 'data-testid="first-steps"' in page and "No duel has been played yet." in page
    assert 'data-testid="duel-list"' not in page
