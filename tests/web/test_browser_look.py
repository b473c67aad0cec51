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


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_the_guide_has_side_navigation_and_language_tabs_used_with_the_keyboard(
    browser: Any, site: dict[str, Any], viewport: dict[str, int]
) -> None:
    """The sections are listed in a side navigation (beside the text and kept in view while reading at
    1280 px, above it on a phone); the interface's languages are ARIA tabs: Tab reaches the selected one,
    ←/→/Home/End choose, the choice is remembered, Tab goes on into the code."""
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(site["base"] + "/guide/")
    nav = page.locator("[data-testid=guide-nav]")
    assert nav.locator("a").count() >= 10 and nav.is_visible()
    web_browser.SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(web_browser.SCREENSHOTS / f"guide-top-{viewport['width']}.png"))
    if viewport is DESKTOP:  # beside the text, still in view far down the page
        article = page.locator("[data-testid=guide]").bounding_box()
        assert nav.bounding_box()["x"] + nav.bounding_box()["width"] <= article["x"]
        page.click("[data-testid=guide-nav] a[href='#errors']")
        page.wait_for_function("() => location.hash === '#errors'")
        assert 0 <= nav.bounding_box()["y"] < viewport["height"]
        page.wait_for_selector("[data-testid=guide-nav] a[href='#errors'][aria-current=location]")
        assert nav.locator("a[aria-current]").count() == 1  # the section being read, marked
        page.goto(site["base"] + "/guide/")
    tabs = page.locator("[role=tablist] [role=tab]")
    assert tabs.all_inner_texts() == ["Python", "Kaggle", "C++", "JavaScript"]
    panels = {
        name: page.locator(f"[data-testid=lang-{name}]") for name in ("python", "kaggle", "cpp", "javascript")
    }
    assert panels["python"].is_visible() and not panels["kaggle"].is_visible()
    page.locator("[data-testid=code-tabs]").scroll_into_view_if_needed()
    page.focus("[data-testid=guide-nav] a[href='#rl-arena']")  # the last link before the text
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.getAttribute('role')") == "tab":
            break
    else:
        pytest.fail("Tab never reached the language tabs")
    assert page.evaluate("document.activeElement.textContent") == "Python"
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.textContent") == "Kaggle"
    assert panels["kaggle"].is_visible() and not panels["python"].is_visible()
    assert tabs.nth(1).get_attribute("aria-selected") == "true"
    page.keyboard.press("End")
    assert (
        panels["javascript"].is_visible() and "module.exports = Player;" in panels["javascript"].inner_text()
    )
    page.keyboard.press("ArrowRight")  # wraps around
    assert page.evaluate("document.activeElement.textContent") == "Python"
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    assert panels["cpp"].is_visible() and "arena::run(argc, argv, player)" in panels["cpp"].inner_text()
    page.keyboard.press("Tab")  # out of the tablist, into the shown panel
    assert page.evaluate("document.activeElement.getAttribute('role')") == "tabpanel"
    page.screenshot(path=str(web_browser.SCREENSHOTS / f"guide-tabs-{viewport['width']}.png"))  # in view
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= viewport["width"], f"the guide is {width} px wide"
    page.reload()
    assert panels["cpp"].is_visible() and not panels["python"].is_visible()  # remembered
    assert errors == []
    context.close()


def test_the_guide_without_javascript_shows_every_language(browser: Any, site: dict[str, Any]) -> None:
    context = browser.new_context(viewport=PHONE, java_script_enabled=False)
    page = context.new_page()
    page.goto(site["base"] + "/guide/")
    assert page.locator("[role=tablist]").count() == 0
    for name, heading in (
        ("python", "Python"),
        ("kaggle", "Kaggle"),
        ("cpp", "C++"),
        ("javascript", "JavaScript"),
    ):
        panel = page.locator(f"[data-testid=lang-{name}]")
        assert panel.is_visible() and panel.locator("h3").inner_text() == heading
        assert panel.locator("pre").is_visible()
    assert page.locator("[data-testid=guide-nav]").is_visible()
    _shot(page, "guide-no-javascript-390")
    context.close()


def _goofspiel_game(user: Any, turns: int) -> Any:
    """A live Goofspiel game of ``user`` against a public agent, ``turns`` turns played, the person to bid."""
    from django.utils import timezone

    from core.models import PlaySession
    from environments import get_game
    from tests.web import factories

    env = factories.environment("goofspiel")
    opponent = factories.competitor(factories.user(), env, "matcher", is_public=True)
    game = get_game("goofspiel")
    state = game.initial_state(7)
    actions = []
    for t in range(turns):
        for _seat in range(2):
            legal = game.legal_actions(state)
            actions.append(legal[(t * 3) % len(legal)])
            state = game.apply(state, actions[-1])
    now = timezone.now()
    return PlaySession.objects.create(
        user=user,
        environment=env,
        revision=opponent.current_revision,
        human_seat=0,
        status=PlaySession.Status.PLAYING,
        state=state,
        actions=actions,
        moves=len(actions),
        started_at=now,
        last_activity_at=now,
    )


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_the_goofspiel_board_has_a_legend_and_words_of_a_readable_size(
    browser: Any, site: dict[str, Any], alice: Any, viewport: dict[str, int]
) -> None:
    """Played cards are grey and crossed out, and a legend says so; the state and the last turn are said
    in words at the page's size (no caption under 14 px, once 11 px in a 460 px box); the board fills the
    phone's width and bids are made with the keyboard."""
    from tests.web.test_browser_pages import _log_in

    session = _goofspiel_game(alice, turns=3)
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _log_in(page, site["base"])
    page.goto(f"{site['base']}/play/{session.pk}/")
    board = page.locator("[data-testid=play-board]")
    board.locator(".rl-legend").wait_for()
    legend = board.locator(".rl-legend").inner_text()
    assert "Already played (crossed out)" in legend and "In hand" in legend and "Last turn" in legend
    assert board.locator(".rl-used").count() == 6 and board.locator(".rl-used line").count() == 6
    caption = board.locator(".rl-goofspiel-caption").inner_text()
    assert "Turn 4 of 13" in caption and "Last turn:" in caption
    sizes = page.evaluate(
        """() => {
            const board = document.querySelector('[data-testid=play-board]');
            const svg = board.querySelector('svg');
            const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
            const out = [];
            const px = t => parseFloat(getComputedStyle(t).fontSize);
            board.querySelectorAll('svg text').forEach(t => out.push(px(t) * scale));
            board.querySelectorAll('figcaption p, figcaption li').forEach(t => out.push(px(t)));
            return out;
        }"""
    )
    svg_width = board.locator("svg").bounding_box()["width"]
    if viewport is PHONE:
        assert svg_width >= 340, f"the board is {svg_width} px wide on a phone"
        assert min(sizes) >= 11, sizes  # the cards' digits and names scale with the picture
        caption_sizes = page.evaluate(
            "() => [...document.querySelectorAll('[data-testid=play-board] figcaption p, "
            "[data-testid=play-board] figcaption li')].map(t => parseFloat(getComputedStyle(t).fontSize))"
        )
        assert min(caption_sizes) >= 14, caption_sizes
    else:
        assert 520 <= svg_width <= 600, svg_width
        assert min(sizes) >= 14, sizes
    _shot(page, f"goofspiel-board-{viewport['width']}")
    in_board = "() => !!document.activeElement.closest('[data-testid=play-board]')"
    for _ in range(80):
        page.keyboard.press("Tab")
        if page.evaluate(in_board):
            break
    else:
        pytest.fail("Tab never reached the cards")
    bid = page.evaluate("document.activeElement.getAttribute('data-action')")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelector('[data-testid=play-board]').dataset.moves === '7'")
    session.refresh_from_db()
    assert session.actions[-1] == int(bid)
    assert errors == []
    context.close()


def test_a_finished_game_offers_to_play_again(browser: Any, site: dict[str, Any], alice: Any) -> None:
    """Once the game is over "Play again" replaces "End this game" (the keyboard's focus moves to it) and
    opens a new game against the same agent."""
    from core.models import PlaySession, Revision
    from tests.web.test_browser_a11y import live_game
    from tests.web.test_browser_pages import _log_in

    opponent = site["played"].revision_2.competitor
    Revision.objects.filter(pk=opponent.current_revision_id).update(agent_ref="example:random")  # built
    game = live_game(alice, opponent)
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    _log_in(page, site["base"])
    page.goto(f"{site['base']}/play/{game.pk}/")
    page.wait_for_selector("[data-testid=play-board] .rl-clickable")
    assert not page.locator("[data-testid=play-again]").is_visible()
    page.focus("[data-testid=play-end]")
    PlaySession.objects.filter(pk=game.pk).update(
        status=PlaySession.Status.FINISHED, result=PlaySession.Result.AGENT_WIN
    )
    page.wait_for_function("() => document.querySelector('[data-play]').dataset.status === 'FINISHED'")
    again = page.locator("[data-testid=play-again]")
    assert again.is_visible() and not page.locator("[data-testid=play-end]").is_visible()
    assert page.evaluate("document.activeElement.dataset.testid") == "play-again"
    assert page.inner_text("[data-testid=play-help]") == "Unrated. The game is over."
    _shot(page, "play-again-390")
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: url.rstrip("/").endswith(str(game.pk)) is False and "/play/" in url)
    newer = PlaySession.objects.filter(user=alice, revision__competitor=opponent).exclude(pk=game.pk).get()
    assert page.url.rstrip("/").endswith(f"/play/{newer.pk}")
    context.close()
