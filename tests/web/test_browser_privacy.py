"""Private stays private, in Chromium: the match page and a live game's page as a visitor, as the opponent
(the person who played) and as the agent's owner, on a live server. The duel is a real referee duel (see
``test_web_error_privacy``); what a signed-in person sees comes from logging in through the login form.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections

from core.actions.play import end_play_session, start_play_session
from core.models import PlaySession, Revision
from tests.web import test_browser as web_browser
from tests.web.privacy_lib import SECRETS, play_referee_duel, store_crashed_duel
from tests.web.test_browser import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.slow]

browser = web_browser.browser
WAIT_MS = 30_000
LIVE_MESSAGE = (
    "leaky raised ValueError at its move 1:\nTraceback (most recent call last):\n"
    '  File "/agent/player.py", line 12, in step\n'
    '    raise ValueError("SECRET-EXCEPTION")  # SECRET-SOURCE-LINE\n'
    "\nLast lines of the agent's stderr:\nSECRET-STDERR-LINE"
)


@pytest.fixture
def site(
    live_server: Any, env: Any, alice: Any, bob: Any, settings: Any, tmp_path: Any
) -> Iterator[dict[str, Any]]:
    """A real crashed duel, and a live game Bob played against Alice's agent, which crashed."""
    crashed = store_crashed_duel(env, alice, bob, play_referee_duel(tmp_path))
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    for user in (alice, bob):
        user.set_password(PASSWORD)
        user.save()
    leaky = crashed.revision_2.competitor
    leaky.is_public = True
    leaky.save(update_fields=["is_public"])
    Revision.objects.filter(pk=leaky.current_revision_id).update(agent_ref="local-folder")
    session = start_play_session(bob, leaky.pk)
    PlaySession.objects.filter(pk=session.pk).update(status=PlaySession.Status.PLAYING)
    end_play_session(session.pk, PlaySession.Result.AGENT_ERROR, kind="CRASH", message=LIVE_MESSAGE)
    yield {
        "base": live_server.url,
        "match": f"/matches/{crashed.matches.get(index=0).pk}/",
        "play": f"/play/{session.pk}/",
    }
    connections.close_all()  # ORM connections opened while Playwright ran


def _page_as(browser: Any, base: str, email: str | None) -> tuple[Any, Any]:
    context = browser.new_context()
    page = context.new_page()
    if email:
        page.goto(base + "/accounts/login/")
        page.fill("#id_username", email)
        page.fill("#id_password", PASSWORD)
        page.click("main form button[type=submit]")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
    return context, page


def _shown(page: Any) -> str:
    return page.evaluate("document.body.innerText")


def test_the_match_and_live_game_pages_show_the_agents_output_to_its_owner_only(
    browser: Any, site: dict[str, Any]
) -> None:
    for who in (None, "bob@example.com", "alice@example.com"):  # a visitor, the opponent, the owner
        _check_pages(browser, site, who)


def _check_pages(browser: Any, site: dict[str, Any], who: str | None) -> None:
    owner = who == "alice@example.com"
    context, page = _page_as(browser, site["base"], who)
    page.goto(site["base"] + site["match"])
    error = page.get_by_test_id("match-error")
    error.wait_for(timeout=WAIT_MS)
    assert "leaky (player 2) crashed" in error.inner_text()
    html = page.content()
    for secret in SECRETS:
        assert (secret in html) == owner, f"{secret} on the match page for {who or 'a visitor'}"

    page.goto(site["base"] + site["play"])
    reason = page.get_by_test_id("play-end-reason")
    reason.wait_for(state="visible", timeout=WAIT_MS)
    assert "crashed (its code raised an exception" in reason.inner_text()
    detail = page.get_by_test_id("play-agent-error")
    if owner:
        detail.wait_for(state="visible", timeout=WAIT_MS)
        assert all(s in detail.inner_text() for s in SECRETS)
    else:
        assert detail.is_hidden()
        shown = _shown(page) + page.content()
        assert not [s for s in SECRETS if s in shown], f"the live game leaks to {who or 'a visitor'}"
    context.close()
