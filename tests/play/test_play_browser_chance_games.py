"""In Chromium against a live server and a real worker (local sandbox): a person plays Goofspiel and Leduc
Hold'em against their strong example agents to the end by clicking, and the page never draws the agent's
hidden card or its bid of the running turn. Screenshots go to ``data/screenshots/``."""

from __future__ import annotations

import time
from typing import Any

import pytest

from core.models import PlaySession
from tests.play import test_play_browser as play_browser
from tests.play.test_play_browser import GAME_TIMEOUT_S, _closing_connections
from tests.web import test_browser as web_browser
from tests.web.test_browser import _shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

browser = web_browser.browser
worker = web_browser.worker
page_for = play_browser.page_for

AGENTS = {"goofspiel": "goofspiel_matcher", "leduc-holdem": "leduc_cfr"}


@pytest.mark.parametrize("slug", sorted(AGENTS))
def test_a_person_plays_a_game_of_chance_to_the_end_seeing_only_their_side(
    slug, page_for, live_server, worker, make_competitor
):
    _closing_connections(_play, slug, page_for, live_server, make_competitor)


def _play(slug: str, page_for: Any, live_server: Any, make_competitor: Any) -> None:
    opponent = make_competitor(AGENTS[slug], env=slug, name=f"{slug}-bot")
    page = page_for(f"{slug.replace('-', '')}@example.com")
    page.goto(f"{live_server.url}/competitors/{opponent.pk}/")
    page.click("[data-testid=play-button]")
    page.wait_for_url("**/play/*/")
    root = page.locator("[data-play]")
    board = page.locator("[data-testid=play-board]")
    clicks = 0
    started = time.monotonic()
    while True:
        assert time.monotonic() - started < GAME_TIMEOUT_S, "the game did not end in time"
        page.wait_for_function(
            "() => { const r = document.querySelector('[data-play]');"
            " return r.dataset.status === 'FINISHED' ||"
            " document.querySelector('[data-your-turn=\"1\"] .rl-clickable'); }",
            timeout=GAME_TIMEOUT_S * 1000,
        )
        if root.get_attribute("data-status") == "FINISHED":
            break
        if slug == "leduc-holdem":
            # Both private cards are drawn; only the person's has a face (a text) while the game runs.
            assert page.locator("[data-testid=play-board] .rl-private").count() == 2
            assert page.locator("[data-testid=play-board] .rl-private text").count() == 1
        else:
            assert page.locator("[data-testid=play-board] .rl-pending").count() == 0  # the person bids first
        if clicks == 2:
            _shot(page, f"play-{slug}-in-progress")
        moves = int(board.get_attribute("data-moves"))
        options = page.locator("[data-testid=play-board] .rl-clickable")
        options.nth(clicks % options.count()).click()
        clicks += 1
        page.wait_for_function(
            "n => Number(document.querySelector('[data-testid=play-board]').dataset.moves) > n"
            " || document.querySelector('[data-play]').dataset.status === 'FINISHED'",
            arg=moves,
        )
    session = PlaySession.objects.get(environment__slug=slug)
    assert session.result in ("HUMAN_WIN", "AGENT_WIN", "DRAW"), session.error_msg
    status = page.inner_text("[data-testid=play-status]")
    agent = f"{session.revision.competitor.name} v{session.revision.version}"
    ending = {"HUMAN_WIN": "Game over. You won.", "DRAW": "Game over. It is a draw."}
    assert status == ending.get(session.result, f"Game over. {agent} won.")
    assert "human" not in status  # once "Game over: the human won."
    if slug == "leduc-holdem":
        page.wait_for_selector("[data-testid=play-replay-card] .replay-controls")
    _shot(page, f"play-{slug}-finished")
    assert page.errors == []
