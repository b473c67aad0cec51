"""In Chromium against a live server and a real Celery worker (local sandbox): a person plays Connect Four
against ``example_players/random`` to the end by clicking columns, then challenges it with their own
competitor and watches the unrated duel finish. Screenshots go to ``data/screenshots/``.

Chromium is Debian's (``/usr/bin/chromium``) through Playwright, launched exactly as in
``tests/web/test_browser.py`` (whose ``browser`` and ``worker`` fixtures are reused); ``playwright install``
is never run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from core.models import Duel, PlaySession, User
from tests.web import test_browser as web_browser
from tests.web.test_browser import _shot, _sign_up

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# The web suite's fixtures: Chromium with its launch options; a real worker with beat on the test database.
browser = web_browser.browser
worker = web_browser.worker

GAME_TIMEOUT_S = 90


@pytest.fixture
def page_for(browser: Any, live_server: Any) -> Callable[[str], Any]:
    """A signed-up person's page (fresh browser context); errors in the page's scripts fail the test."""
    contexts: list[Any] = []

    def make(email: str) -> Any:
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        contexts.append(context)
        page = context.new_page()
        page.errors = []
        page.on("pageerror", lambda exc: page.errors.append(str(exc)))
        _sign_up(page, live_server.url, email, email.split("@")[0])
        return page

    yield make
    for context in contexts:
        context.close()


def _closing_connections(journey: Callable[..., None], *args: Any) -> None:
    """Run ``journey``, then close the ORM connections it opened: calls made while Playwright drives the
    browser open them in Playwright's context, and they must not outlive the test database."""
    from django.db import connections

    try:
        journey(*args)
    finally:
        connections.close_all()


def test_a_person_plays_connect_four_against_random_to_the_end(
    page_for, live_server, worker, make_competitor
):
    _closing_connections(_play_to_the_end, page_for, live_server, make_competitor)


def _play_to_the_end(page_for: Any, live_server: Any, make_competitor: Any) -> None:
    opponent = make_competitor("random", name="random-bot")
    page = page_for("grace@example.com")
    page.goto(f"{live_server.url}/competitors/{opponent.pk}/")
    page.click("[data-testid=play-button]")
    page.wait_for_url("**/play/*/")
    root = page.locator("[data-play]")
    clicks = 0
    started = time.monotonic()
    while root.get_attribute("data-status") != "FINISHED":
        assert time.monotonic() - started < GAME_TIMEOUT_S, "the game did not end in time"
        page.wait_for_function(
            "() => { const r = document.querySelector('[data-play]');"
            " return r.dataset.status === 'FINISHED' ||"
            " document.querySelector('[data-your-turn=\"1\"] .rl-clickable'); }",
            timeout=GAME_TIMEOUT_S * 1000,
        )
        if root.get_attribute("data-status") == "FINISHED":
            break
        if clicks == 1:
            _shot(page, "play-connect-four-in-progress")
        columns = page.locator("[data-testid=play-board] .rl-clickable")
        columns.nth(clicks % columns.count()).click()
        clicks += 1
        page.wait_for_function(
            "n => Number(document.querySelector('[data-testid=play-board]').dataset.moves) > n",
            arg=2 * clicks - 2,
        )
    elapsed = time.monotonic() - started
    session = PlaySession.objects.get()
    print(f"{clicks} human moves, {session.moves} in all, game over after {elapsed:.1f} s: {session.result}")
    assert session.result in ("HUMAN_WIN", "AGENT_WIN", "DRAW")
    assert clicks == len(session.actions[0::2]) and session.user.email == "grace@example.com"
    status = page.inner_text("[data-testid=play-status]")
    agent = f"{session.revision.competitor.name} v{session.revision.version}"
    ending = {"HUMAN_WIN": "Game over. You won.", "DRAW": "Game over. It is a draw."}
    assert status == ending.get(session.result, f"Game over. {agent} won.")
    assert "human" not in status  # once "Game over: the human won."
    page.wait_for_selector("[data-testid=play-replay-card] .replay-controls")
    _shot(page, "play-connect-four-finished")
    assert page.errors == []


def test_a_person_challenges_a_competitor_and_sees_the_result(page_for, live_server, worker, make_competitor):
    _closing_connections(_challenge, page_for, live_server, make_competitor)


def _challenge(page_for: Any, live_server: Any, make_competitor: Any) -> None:
    opponent = make_competitor("random", name="random-target")
    page = page_for("hopper@example.com")
    mine = make_competitor("random", owner=User.objects.get(email="hopper@example.com"), name="my-random")
    page.goto(f"{live_server.url}/competitors/{opponent.pk}/")
    page.select_option("select[name=challenger]", str(mine.pk))
    page.click("[data-testid=challenge-button]")
    page.wait_for_url("**/duels/*/")
    duel = Duel.objects.get(kind=Duel.Kind.CHALLENGE)
    assert page.url.endswith(f"/duels/{duel.pk}/")
    page.wait_for_selector("[data-testid=duel-live]", state="detached", timeout=GAME_TIMEOUT_S * 1000)
    duel.refresh_from_db()
    assert duel.state == Duel.State.FINISHED and duel.result in ("PLAYER_1_WIN", "PLAYER_2_WIN", "DRAW")
    heading = page.inner_text("main")
    assert "my-random" in heading and "random-target" in heading and "challenge" in heading
    _shot(page, "challenge-duel-finished")
    assert page.errors == []
