"""A newcomer's whole journey in Chromium (issue 32's acceptance), against a live server and a real Celery
worker with the local sandbox (``tests/web/test_browser.py``'s ``worker``): sign up, download the starter kit,
upload it unchanged, watch it get built, smoke-tested and ranked, follow its first rated ladder duel to the
duel page (the leaderboard's own place) and a replay stepped with the keyboard, play a live game against the
demo agent with the keyboard alone to its end ("Play again"), list the live games, then challenge the demo
agent and watch the unrated duel finish.

Every page of the walk is checked by axe-core (``tests/web/a11y.py``: no critical or serious violation) at
1280 px as it is walked, then again at 390 px with the same session, where the page must not be wider than
the phone. Screenshots of every page at both widths are kept in ``test-artifacts/journey/`` (gitignored),
whose path the test prints.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import models

from core.models import Duel, PlaySession, Revision
from tests.web import a11y
from tests.web import test_browser as web_browser
from tests.web.test_browser import PASSWORD, PIPELINE_TIMEOUT_S, REPO, _wait_for, _wait_until_ranked

pytestmark = [pytest.mark.browser, pytest.mark.slow]

browser = web_browser.browser
worker = web_browser.worker

ARTIFACTS = REPO / "test-artifacts" / "journey"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
GAME_TIMEOUT_S = 120


class Walk:
    """The pages walked, each checked by axe and photographed when it is reached."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.pages: list[tuple[str, str]] = []
        self.failures: list[str] = []

    def check(self, name: str, width: int = 1280, page: Any = None) -> None:
        page = page or self.page
        page.wait_for_load_state("load")
        found = a11y.violations(page)
        if found:
            self.failures.append(f"{name} ({page.url}) at {width} px:\n{a11y.describe(found)}")
        walked = [n for n, _ in self.pages]
        step = walked.index(name) if name in walked else len(walked)  # the same number at both widths
        page.screenshot(path=str(ARTIFACTS / f"{step:02d}-{name}-{width}.png"), full_page=True)
        if page is self.page:
            self.pages.append((name, page.url))


def test_a_newcomer_goes_from_sign_up_to_a_rated_agent_a_replay_a_live_game_and_a_challenge(
    browser: Any, live_server: Any, worker: Any, tmp_path: Path
) -> None:
    from django.db import connections

    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    try:
        _journey(browser, live_server, worker, tmp_path)
    finally:
        connections.close_all()  # ORM connections opened while Playwright ran
        print(f"\njourney screenshots: {ARTIFACTS}")


def _journey(browser: Any, live_server: Any, worker: Any, tmp_path: Path) -> None:
    from core.management.commands.load_example_players import load_example_players
    from tests.web import factories

    factories.environment("connect-four")  # the games, as `manage.py sync_environments` makes them
    load_example_players("demo@example.com", ("random",))  # the demo opponent prepare_dev.sh loads
    base = live_server.url
    context = browser.new_context(viewport=DESKTOP, accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    walk = Walk(page)

    # Sign up from the home page's header.
    page.goto(base + "/")
    walk.check("home-signed-out")
    page.click("header >> text=Sign up")
    walk.check("sign-up")
    page.fill("#id_email", "journey@example.com")
    page.fill("#id_display_name", "Journey")
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    page.click("main form button[type=submit]")
    page.wait_for_url("**/upload/")
    walk.check("upload")

    # The guide, then the game page's starter kit, uploaded unchanged.
    page.click("header >> text=Write an agent")
    page.wait_for_selector("[data-testid=guide]")
    walk.check("guide")
    page.goto(base + "/games/connect-four/")
    walk.check("game")
    with page.expect_download() as download:
        page.click("[data-testid=starter-kit]")
    kit = tmp_path / download.value.suggested_filename
    download.value.save_as(kit)
    page.click("main >> text=Upload an agent")
    page.wait_for_url("**/upload/?environment=connect-four")
    page.fill("#id_name", "journey-bot")
    page.set_input_files("#id_file", str(kit))
    page.click("main form button[type=submit]")
    page.wait_for_url("**/revisions/*/")
    revision_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
    _wait_until_ranked(page, worker, "the starter kit")
    walk.check("revision-ranked")
    revision = Revision.objects.select_related("competitor").get(pk=revision_id)
    mine = revision.competitor

    # Its first rated ladder duel against the demo agent: the duel page, then a replay.
    duel = _wait_for(
        lambda: (
            Duel.objects.filter(state=Duel.State.FINISHED, rated=True, kind=Duel.Kind.LADDER)
            .filter(models.Q(revision_1=revision) | models.Q(revision_2=revision))
            .first()
        ),
        PIPELINE_TIMEOUT_S,
        "a rated ladder duel of the starter kit",
    )
    page.goto(f"{base}/competitors/{mine.pk}/")
    assert page.locator("[data-testid=history-row]").count() >= 1
    walk.check("competitor")
    page.click(f"[data-testid=duel-history] a[href='/duels/{duel.pk}/']")
    page.wait_for_url(f"**/duels/{duel.pk}/")
    seat = 1 if duel.revision_1_id == revision_id else 2
    place = page.inner_text(f"[data-testid=standing-{seat}]")
    assert place.startswith(("#", "= #")) and " of 2" in place  # the leaderboard's place, 2 ranked agents
    assert "On the leaderboard it is" in page.inner_text(f"[data-testid=rating-story-{seat}]")
    walk.check("duel-rated")
    page.click("[data-testid=matches] a.btn >> nth=0")
    page.wait_for_selector("[data-testid=replay-stage]")
    page.keyboard.press("ArrowRight")
    assert page.inner_text("[data-testid=replay-caption]").startswith("Move 1: ")
    page.keyboard.press("End")
    assert "Result: " in page.inner_text("[data-testid=replay-caption]")
    walk.check("replay")

    # A live game against the demo agent, with the keyboard alone.
    demo = Revision.objects.select_related("competitor").get(
        competitor__owner__email="demo@example.com", competitor__environment__slug="connect-four"
    )
    page.goto(f"{base}/competitors/{demo.competitor_id}/")
    walk.check("opponent")
    page.focus("[data-testid=play-button]")
    page.keyboard.press("Enter")
    page.wait_for_url("**/play/*/")
    session = PlaySession.objects.get(user__email="journey@example.com")
    page.wait_for_selector("[data-testid=play-board] .rl-clickable", timeout=GAME_TIMEOUT_S * 1000)
    walk.check("live-game")
    _play_with_the_keyboard(page)
    session.refresh_from_db()
    assert session.result in ("HUMAN_WIN", "AGENT_WIN", "DRAW"), session.error_msg
    assert page.locator("[data-testid=play-again]").is_visible()
    page.wait_for_selector("[data-testid=play-replay-card] .replay-controls")
    walk.check("live-game-over")
    page.goto(base + "/play/")
    assert page.locator("[data-testid=no-live-games]").is_visible()  # the finished game is not live
    walk.check("live-games")

    # A challenge of the demo agent: an unrated duel, watched to its end.
    page.goto(f"{base}/competitors/{demo.competitor_id}/")
    page.select_option("select[name=challenger]", str(mine.pk))
    page.click("[data-testid=challenge-button]")
    page.wait_for_url("**/duels/*/")
    challenge = Duel.objects.get(kind=Duel.Kind.CHALLENGE)
    page.wait_for_selector("[data-testid=duel-live]", state="detached", timeout=GAME_TIMEOUT_S * 1000)
    challenge.refresh_from_db()
    assert challenge.state == Duel.State.FINISHED
    assert "challenge (unrated)" in page.inner_text("main").lower()
    assert page.locator("[data-testid=rating-change-1]").count() == 0
    walk.check("challenge")
    page.goto(base + "/")
    walk.check("home-signed-in")
    assert errors == [], errors

    # The same pages on a phone, with the same session.
    phone = browser.new_context(viewport=PHONE, storage_state=context.storage_state())
    small = phone.new_page()
    small.on("pageerror", lambda exc: errors.append(str(exc)))
    too_wide = []
    for name, url in walk.pages:
        if name in ("sign-up", "home-signed-out"):
            continue  # signed-out pages: checked below without the session
        small.goto(url)
        walk.check(name, 390, small)
        width = small.evaluate("document.documentElement.scrollWidth")
        if width > PHONE["width"]:
            too_wide.append(f"{name}: {width} px")
    phone.close()
    signed_out = browser.new_context(viewport=PHONE)
    visitor = signed_out.new_page()
    for name, path in (("home-signed-out", "/"), ("sign-up", "/accounts/signup/")):
        visitor.goto(base + path)
        walk.check(name, 390, visitor)
    signed_out.close()
    context.close()
    assert not walk.failures, "\n\n".join(walk.failures)
    assert not too_wide, too_wide
    assert errors == [], errors


def _play_with_the_keyboard(page: Any) -> None:
    """Moves until the game ends: Tab into the board's legal moves when the focus is not on one, then
    Enter (the focus stays on the board between moves)."""
    root = page.locator("[data-play]")
    on_a_move = "() => !!document.activeElement.closest('[data-testid=play-board] .rl-clickable')"
    started = time.monotonic()
    moves = 0
    while True:
        assert time.monotonic() - started < GAME_TIMEOUT_S, "the game did not end in time"
        page.wait_for_function(
            "() => document.querySelector('[data-play]').dataset.status === 'FINISHED' ||"
            " document.querySelector('[data-your-turn=\"1\"] .rl-clickable')",
            timeout=GAME_TIMEOUT_S * 1000,
        )
        if root.get_attribute("data-status") == "FINISHED":
            return
        for _ in range(80):
            if page.evaluate(on_a_move):
                break
            page.keyboard.press("Tab")
        else:
            pytest.fail("Tab never reached a legal move")
        before = int(page.get_attribute("[data-testid=play-board]", "data-moves"))
        page.keyboard.press("Enter")
        moves += 1
        page.wait_for_function(
            "n => Number(document.querySelector('[data-testid=play-board]').dataset.moves) > n"
            " || document.querySelector('[data-play]').dataset.status === 'FINISHED'",
            arg=before,
        )
        if moves == 2:
            page.screenshot(path=str(ARTIFACTS / "live-game-keyboard-1280.png"))
