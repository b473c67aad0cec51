"""The look, in Chromium (issue 32 item 6): each game card on the home page and each game page shows its
board drawn by the game's own renderer; at 390 px a leaderboard wider than the screen scrolls inside its
box (the page itself does not). Rows from the factories; screenshots go to ``data/screenshots/``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.web import test_browser as web_browser
from tests.web.test_browser import _shot
from tests.web.test_browser_pages import DESKTOP, PHONE, build_site

pytestmark = [pytest.mark.browser, pytest.mark.slow]

browser = web_browser.browser


@pytest.fixture
def site(live_server: Any, env: Any, alice: Any, bob: Any, settings: Any) -> Iterator[dict[str, Any]]:
    from django.db import connections

    yield build_site(live_server, env, alice, bob, settings)
    connections.close_all()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_game_cards_and_pages_show_the_games_board(
    browser: Any, site: dict[str, Any], viewport: dict[str, int]
) -> None:
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(site["base"] + "/")
    card_board = page.locator("[data-testid=game-card-board][data-game=connect-four]")
    card_board.locator("svg.rl-connect-four").wait_for()
    assert card_board.is_visible()
    assert card_board.locator(".rl-piece").count() > 0  # a position with pieces, not an empty grid
    _shot(page, f"home-boards-{viewport['width']}")
    page.goto(site["base"] + "/games/connect-four/")
    board = page.locator("[data-testid=game-board]")
    board.locator("svg.rl-connect-four").wait_for()
    assert board.is_visible() and board.locator(".rl-clickable").count() == 0  # a picture, no moves
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= viewport["width"], f"the game page is {width} px wide"
    _shot(page, f"game-board-{viewport['width']}")
    assert errors == []
    context.close()
