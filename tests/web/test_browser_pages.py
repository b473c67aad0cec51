"""The rough edges a new user hit, checked in Chromium against a live server (no worker: rows are made by
the factories as the pipeline would leave them). Every page fits a 390 px phone with a one-row header; the
replay starts from the empty board with each move captioned; a running duel's matches appear without a
reload; a too-large zip is refused before it is sent; the replay page speaks without JavaScript.
Screenshots (390 px and desktop) go to ``data/screenshots/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from core.models import Competitor, Duel, Revision
from tests.web import factories
from tests.web import test_browser as web_browser
from tests.web.test_browser import PASSWORD, _shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

browser = web_browser.browser  # Debian's Chromium through Playwright, as the journey test launches it

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
WAIT_MS = 30_000


@pytest.fixture
def site(live_server: Any, env: Any, alice: Any, bob: Any, settings: Any) -> Iterator[dict[str, Any]]:
    """A small arena: ranked competitors with duels (one won by errors, one rated), a running duel, a
    failed revision, Alice's account. ORM connections opened while Playwright runs are closed after."""
    from django.db import connections

    yield build_site(live_server, env, alice, bob, settings)
    connections.close_all()


def build_site(live_server: Any, env: Any, alice: Any, bob: Any, settings: Any) -> dict[str, Any]:
    """The rows of ``site`` (also used by ``test_browser_a11y.py``)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    for user in (alice, bob):
        user.set_password(PASSWORD)
        user.save()
    minimax = factories.competitor(alice, env, "minimax-with-a-rather-long-name", is_public=True)
    rnd = factories.competitor(bob, env, "random", is_public=True)
    flaky = factories.competitor(bob, env, "flaky")
    played = factories.duel(minimax, rnd, num_matches=4, initial_state=False)
    factories.rate_duel(played, {minimax: (27.5, 6.1), rnd: (22.0, 6.3)})
    errors = factories.error_duel(minimax, flaky, erring=2, kind="TIMEOUT", num_matches=4)
    factories.rate_duel(errors, {minimax: (29.0, 5.2), flaky: (21.0, 6.5)})
    failed = factories.revision(minimax, state=Revision.State.TEST_FAILED)
    Revision.objects.filter(pk=failed.pk).update(
        error_message="match 1 of 4: CRASH: PLAYER_1 raised RuntimeError at move 5:\n"
        'Traceback (most recent call last):\n  File "/agent/player.py", line 21, in step\n'
        "    raise RuntimeError('boom')\nRuntimeError: boom"
    )
    running = factories.running_duel(minimax, rnd, num_matches=4)
    return {
        "base": live_server.url,
        "minimax": minimax,
        "played": played,
        "errors": errors,
        "failed": failed,
        "running": running,
    }


def _context(browser: Any, viewport: dict[str, int], **options: Any) -> Any:
    return browser.new_context(viewport=viewport, **options)


def _log_in(page: Any, base: str, email: str = "alice@example.com") -> None:
    page.goto(base + "/accounts/login/")
    page.fill("#id_username", email)
    page.fill("#id_password", PASSWORD)
    page.click("main form button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def _pages(site: dict[str, Any]) -> dict[str, str]:
    m = site["minimax"]
    return {
        "home": "/",
        "game": "/games/connect-four/",
        "competitor": f"/competitors/{m.pk}/",
        "duel-errors": f"/duels/{site['errors'].pk}/",
        "duel-rated": f"/duels/{site['played'].pk}/",
        "match": f"/matches/{site['played'].matches.first().pk}/",
        "revision-failed": f"/revisions/{site['failed'].pk}/",
        "upload": "/upload/",
        "guide": "/guide/",
        "api-docs": "/api-docs/",
        "profile": "/accounts/profile/",
        "not-found": "/no/such/page/",
    }


def test_every_page_fits_a_phone_with_a_one_row_header(browser: Any, site: dict[str, Any]) -> None:
    for viewport, suffix in ((PHONE, "390"), (DESKTOP, "desktop")):
        context = _context(browser, viewport)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
        _log_in(page, site["base"])
        for name, path in _pages(site).items():
            page.goto(site["base"] + path)
            page.wait_for_load_state("load")
            width = page.evaluate("document.documentElement.scrollWidth")
            header = page.evaluate("document.querySelector('.site-header').getBoundingClientRect().height")
            _shot(page, f"{name}-{suffix}")
            assert width <= viewport["width"], f"{path} is {width} px wide at {viewport['width']} px"
            assert header < 70, f"{path}: the header is {header} px tall (it wraps)"
        assert errors == [], errors
        context.close()


def test_the_menu_opens_on_a_phone(browser: Any, site: dict[str, Any]) -> None:
    context = _context(browser, PHONE)
    page = context.new_page()
    page.goto(site["base"] + "/")
    guide_link = page.locator("#main-nav a[href='/guide/']")
    assert not guide_link.is_visible()
    page.click("[data-testid=menu-button]")
    assert guide_link.is_visible()
    _shot(page, "home-menu-open-390")
    guide_link.click()
    page.wait_for_url("**/guide/")
    context.close()


def test_the_replay_starts_from_the_empty_board_and_captions_each_move(
    browser: Any, site: dict[str, Any]
) -> None:
    match = site["played"].matches.order_by("index").first()
    context = _context(browser, DESKTOP)
    page = context.new_page()
    page.goto(f"{site['base']}/matches/{match.pk}/")
    stage = page.locator("[data-testid=replay-stage]")
    caption = page.locator("[data-testid=replay-caption]")
    counter = page.locator("[data-testid=replay-counter]")
    last = len(match.actions)
    assert counter.inner_text() == f"Move 0 / {last}"
    assert stage.locator(".rl-piece").count() == 0  # the empty board
    first_mover = "minimax-with-a-rather-long-name" if match.first_player == "PLAYER_1" else "random"
    assert caption.inner_text() == f"Initial position · {first_mover} moves first"
    _shot(page, "replay-move-0")
    page.keyboard.press("ArrowRight")
    assert stage.locator(".rl-piece").count() == 1
    column = match.actions[0]
    assert caption.inner_text().startswith(
        f"Move 1: {first_mover} played column {column + 1} (action {column}) · thought"
    )
    page.keyboard.press("End")
    assert stage.locator(".rl-piece").count() == last
    final = caption.inner_text()
    winning = match.actions[-1]
    assert f"Move {last}: " in final and f"column {winning + 1} (action {winning})" in final
    assert "Result: " in final
    _shot(page, "replay-last-move")
    # Board labels and captions count columns the same way.
    labels = [t.strip() for t in stage.locator("svg text").all_text_contents()[:7]]
    assert labels == [str(c) for c in range(1, 8)]
    context.close()


def test_the_replay_page_speaks_without_javascript(browser: Any, site: dict[str, Any]) -> None:
    match = site["played"].matches.first()
    context = _context(browser, PHONE, java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{site['base']}/matches/{match.pk}/")
    box = page.locator("[data-testid=replay-noscript]")
    assert box.is_visible()
    assert "The board needs JavaScript." in box.inner_text()
    assert box.locator("ol.moves li").count() == len(match.actions)
    _shot(page, "replay-without-javascript-390")
    context.close()


def test_a_running_duels_matches_appear_as_they_are_recorded(browser: Any, site: dict[str, Any]) -> None:
    duel = site["running"]
    context = _context(browser, DESKTOP)
    page = context.new_page()
    page.goto(f"{site['base']}/duels/{duel.pk}/")
    rows = page.locator("[data-testid=match-row]")
    assert page.locator("[data-testid=duel-live]").is_visible()
    assert rows.count() == 0
    loaded_at = page.evaluate("performance.timeOrigin")
    for index in range(3):
        factories.record_match(duel, index)
        page.wait_for_function(
            "n => document.querySelectorAll('[data-testid=match-row]').length === n",
            arg=index + 1,
            timeout=WAIT_MS,
        )
        assert f"{index + 1} of 4 matches recorded" in page.inner_text("[data-testid=duel-progress]")
    assert page.evaluate("performance.timeOrigin") == loaded_at  # no reload: the rows came by polling
    _shot(page, "duel-live")
    factories.record_match(duel, 3)
    matches = list(duel.matches.all())
    Duel.objects.filter(pk=duel.pk).update(
        state=Duel.State.FINISHED,
        finished_at=timezone.now(),
        result=Duel.Result.DRAW,
        player_1_score=sum(m.player_1_score for m in matches),
        player_2_score=sum(m.player_2_score for m in matches),
    )
    page.wait_for_selector("[data-testid=duel-live]", state="detached", timeout=WAIT_MS)
    assert rows.count() == 4
    context.close()


def test_a_zip_over_the_limit_is_refused_before_it_is_sent(
    browser: Any, site: dict[str, Any], tmp_path: Path
) -> None:
    big = tmp_path / "huge-agent.zip"
    with big.open("wb") as fh:
        fh.truncate(51 * 1024 * 1024)
    context = _context(browser, PHONE)
    page = context.new_page()
    _log_in(page, site["base"])
    page.goto(site["base"] + "/upload/")
    assert "at most 50 MB" in page.inner_text("main")
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    page.fill("#id_name", "too-big")
    page.set_input_files("#id_file", str(big))
    error = page.locator("[data-testid=upload-size-error]")
    assert error.is_visible()
    assert "huge-agent.zip is 51 MB: the limit is 50 MB" in error.inner_text()
    prevented = page.evaluate(
        """() => {
            const form = document.querySelector("[data-testid=upload-form]");
            const submit = new Event("submit", {cancelable: true});
            form.dispatchEvent(submit);
            return submit.defaultPrevented;
        }"""
    )
    assert prevented
    page.click("main form button[type=submit]")  # returns once any navigation it started has begun
    assert posts == [] and page.url.endswith("/upload/")
    _shot(page, "upload-too-large-390")
    context.close()


def test_a_zip_over_the_limit_without_javascript_gets_the_sites_413_page(
    browser: Any, site: dict[str, Any], tmp_path: Path
) -> None:
    big = tmp_path / "huge-agent.zip"
    with big.open("wb") as fh:
        fh.truncate(60 * 1024 * 1024)
    context = _context(browser, DESKTOP, java_script_enabled=False)
    page = context.new_page()
    _log_in(page, site["base"])
    page.goto(site["base"] + "/upload/")
    page.fill("#id_name", "too-big")
    page.set_input_files("#id_file", str(big))
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.click("main form button[type=submit]")
    assert answer.value.status == 413
    assert "the limit is 50 MB" in page.inner_text("[data-testid=error-page]")
    _shot(page, "upload-413")
    context.close()


def test_the_competitor_page_pages_and_filters_its_history(browser: Any, site: dict[str, Any]) -> None:
    minimax = site["minimax"]
    opponent = Competitor.objects.get(name="flaky")
    context = _context(browser, PHONE)
    page = context.new_page()
    page.goto(f"{site['base']}/competitors/{minimax.pk}/")
    assert page.locator("[data-testid=history-row]").count() == 3  # rated, by errors, running
    page.select_option("[data-testid=duel-filters] select[name=opponent]", str(opponent.pk))
    page.select_option("[data-testid=duel-filters] select[name=errors]", "opponent")
    page.click("[data-testid=duel-filters] button")
    page.wait_for_url(f"**opponent={opponent.pk}**")
    rows = page.locator("[data-testid=history-row]")
    assert rows.count() == 1
    assert "won" in rows.first.inner_text() and "(4 by errors)" in rows.first.inner_text()
    _shot(page, "competitor-history-filtered-390")
    context.close()


def test_the_api_can_be_browsed_and_tried_in_the_browser(browser: Any, site: dict[str, Any]) -> None:
    context = _context(browser, DESKTOP)
    page = context.new_page()
    _log_in(page, site["base"])
    page.goto(site["base"] + "/api-docs/")
    page.click("[data-testid=browse-api]")
    page.wait_for_url("**/api/")
    assert page.locator("a.navbar-brand", has_text="RL Arena").count() == 1
    assert "/api/duels/{id}/replays/" in page.inner_text("body")
    _shot(page, "api-root")
    page.goto(site["base"] + "/api/environments/")
    assert "connect-four" in page.inner_text("body")
    page.goto(site["base"] + "/api/revisions/")
    assert page.locator("form").count() >= 1  # a form to upload a revision, signed in by the session
    _shot(page, "api-revisions")
    context.close()
