"""Accessibility in Chromium: axe-core (``tests/web/a11y.py``) on every main page, signed in and out, at
1280 and 390 px, finds no critical or serious violation; the live board is played with the keyboard alone.
Rows are made by the factories as the pipeline would leave them (no worker); screenshots go to
``data/screenshots/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.utils import timezone

from core.models import PlaySession
from environments import get_game
from tests.web import a11y
from tests.web import test_browser as web_browser
from tests.web.test_browser import _shot
from tests.web.test_browser_pages import DESKTOP, PHONE, _log_in, build_site

pytestmark = [pytest.mark.browser, pytest.mark.slow]

browser = web_browser.browser


@pytest.fixture
def site(live_server: Any, env: Any, alice: Any, bob: Any, settings: Any) -> Iterator[dict[str, Any]]:
    """The pages' small arena plus a live game of Alice's against Bob's public "random" (her turn)."""
    from django.db import connections

    rows = build_site(live_server, env, alice, bob, settings)
    rows["live"] = live_game(alice, rows["played"].revision_2.competitor)
    yield rows
    connections.close_all()


def live_game(user: Any, opponent: Any) -> PlaySession:
    """A running game at its first move, the person to move (as the worker leaves it once claimed)."""
    now = timezone.now()
    initial = get_game(opponent.environment.slug).initial_state(0)
    return PlaySession.objects.create(
        user=user,
        environment=opponent.environment,
        revision=opponent.current_revision,
        human_seat=0,
        status=PlaySession.Status.PLAYING,
        state=initial,
        started_at=now,
        last_activity_at=now,
    )


def _pages(site: dict[str, Any], signed_in: bool) -> dict[str, str]:
    m = site["minimax"]
    pages = {
        "home": "/",
        "game": "/games/connect-four/",
        "seasons": "/games/connect-four/seasons/",
        "competitor": f"/competitors/{m.pk}/",
        "revision": f"/revisions/{site['failed'].pk}/",
        "duel-rated": f"/duels/{site['played'].pk}/",
        "duel-errors": f"/duels/{site['errors'].pk}/",
        "duel-running": f"/duels/{site['running'].pk}/",
        "match": f"/matches/{site['played'].matches.first().pk}/",
        "guide": "/guide/",
        "api-docs": "/api-docs/",
        "live-game": f"/play/{site['live'].pk}/",
    }
    if signed_in:
        pages |= {
            "upload": "/upload/",
            "profile": "/accounts/profile/",
            "notifications": "/notifications/",
            "live-games": "/play/",
        }
    else:
        pages |= {"login": "/accounts/login/", "signup": "/accounts/signup/"}
    return pages


@pytest.mark.parametrize("signed_in", [False, True], ids=["signed-out", "signed-in"])
def test_axe_finds_no_critical_or_serious_violation(
    browser: Any, site: dict[str, Any], signed_in: bool
) -> None:
    failures: list[str] = []
    for viewport, suffix in ((DESKTOP, "1280"), (PHONE, "390")):
        context = browser.new_context(viewport=viewport)
        page = context.new_page()
        if signed_in:
            _log_in(page, site["base"])
        for name, path in _pages(site, signed_in).items():
            page.goto(site["base"] + path)
            page.wait_for_load_state("load")
            if name == "live-game":
                page.wait_for_selector("[data-testid=play-board] svg, [data-testid=play-board] *")
            found = a11y.violations(page)
            if found:
                _shot(page, f"a11y-{name}-{suffix}-{'in' if signed_in else 'out'}")
                failures.append(f"{path} at {viewport['width']} px:\n{a11y.describe(found)}")
        context.close()
    assert not failures, "\n\n".join(failures)


def test_a_live_game_is_played_with_the_keyboard_alone(browser: Any, site: dict[str, Any]) -> None:
    """Tab reaches the board's columns, Enter drops a piece, and the focus stays on the board after the
    redraw (a keyboard player is not sent back to the top of the page after each move)."""
    game = site["live"]
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _log_in(page, site["base"])
    page.goto(f"{site['base']}/play/{game.pk}/")
    page.wait_for_selector("[data-testid=play-board] .rl-clickable")
    in_board = "() => !!document.activeElement.closest('[data-testid=play-board]')"
    for _ in range(80):
        page.keyboard.press("Tab")
        if page.evaluate(in_board):
            break
    else:
        pytest.fail("Tab never reached the board")
    assert page.evaluate("document.activeElement.getAttribute('data-action')") == "0"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('data-action')") == "1"
    _shot(page, "play-keyboard-focus")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelector('[data-testid=play-board]').dataset.moves === '1'")
    game.refresh_from_db()
    assert game.actions == [1]
    assert page.inner_text("[data-testid=play-status]") == "The agent is thinking…"
    assert page.evaluate(in_board), "the focus left the board after the move"
    assert errors == []
    context.close()


def test_a_game_waiting_for_its_agent_draws_no_board_yet(browser: Any, site: dict[str, Any]) -> None:
    """Before the agent runs the page says so; it neither draws "Red (…) to move" nor offers moves, and
    the person can end the game from there."""
    game = site["live"]
    PlaySession.objects.filter(pk=game.pk).update(status=PlaySession.Status.QUEUED, started_at=None)
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    _log_in(page, site["base"])
    page.goto(f"{site['base']}/play/{game.pk}/")
    page.wait_for_function("() => document.querySelector('[data-play]').dataset.status === 'QUEUED'")
    board = page.inner_text("[data-testid=play-board]")
    assert board == "The board appears as soon as the agent is ready."
    assert "Red (" not in page.inner_text("main")  # once "Red (user-3) to move" before the game began
    assert page.inner_text("[data-testid=play-status]") == "Starting the agent…"
    _shot(page, "play-waiting-390")
    page.click("[data-testid=play-end]")
    page.wait_for_function("() => document.querySelector('[data-play]').dataset.status === 'FINISHED'")
    assert page.inner_text("[data-testid=play-status]") == "Game over. You ended the game."
    context.close()


def test_the_phone_menu_opens_with_the_keyboard(browser: Any, site: dict[str, Any]) -> None:
    """At 390 px the links fold behind "Menu": Tab reaches it (after the skip link and the brand), its
    name is its visible text, and Space opens it."""
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    page.goto(site["base"] + "/")
    guide = page.locator("#main-nav a[href='/guide/']")
    assert not guide.is_visible()
    for _ in range(5):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "nav-toggle":
            break
    else:
        pytest.fail("Tab never reached the menu")
    name = page.evaluate("document.activeElement.labels[0].textContent.trim()")
    assert name == "Menu" and page.evaluate("document.activeElement.getAttribute('aria-label')") is None
    page.keyboard.press("Space")
    assert guide.is_visible()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Games"
    context.close()
