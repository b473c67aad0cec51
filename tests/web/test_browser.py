"""End to end in Chromium against a live server and a real Celery worker (local sandbox).

A user signs up, uploads the minimax and random example players for Connect Four, watches each revision
get built, smoke-tested and ranked without reloading, waits for the ladder to play a duel, opens one of
its matches and steps through the replay, and checks the leaderboard. A second user cannot see the first
user's private logs.

The first-visit walk goes from sign-up to a rated agent using only what the site shows: the starter kit
downloaded from the game page and uploaded unchanged, against the demo opponents an operator loads
(``manage.py load_example_players``), then the duel's rating change, the replay, the token on the profile
page used by the ``rl-arena`` client, the guide, the API's front door and the 404 page.
Screenshots of the key pages go to ``data/screenshots/``.

Chromium is Debian's (``/usr/bin/chromium``), driven by Playwright; ``playwright install`` is never run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import models

from core.management.commands.load_example_players import EXAMPLES_DIR, zip_folder
from core.models import Duel, Rating, Revision

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "data" / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
REDIS_URL = (
    os.environ.get("TEST_WEB_REDIS_URL") or os.environ.get("TEST_REDIS_URL") or "redis://127.0.0.1:6379/14"
)
PIPELINE_TIMEOUT_S = 300
PASSWORD = "a-Long-pass-phrase-42"


def _wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")


def _point_celery_at(url: str, options: dict[str, Any] | None = None) -> None:
    from core.celery import app

    app.conf.broker_url = url
    app.conf.broker_transport_options = options or {}
    app._pool = None
    app.amqp._producer_pool = None


def _redis_ok() -> bool:
    try:
        import redis

        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping())
    except Exception:
        return False


def _database_url() -> str:
    from django.db import connection

    s = connection.settings_dict
    if connection.vendor == "postgresql":
        auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
        return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    return "sqlite:///" + str(Path(s["NAME"]).resolve())


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Debian's Chromium through Playwright.

    Playwright's sync API keeps an event loop in this thread; the test's own ORM calls are plain
    synchronous calls between browser actions, so Django's async-context guard is lifted for it.
    """
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def worker(live_server: Any, data_dir: Path, tmp_path: Path, settings: Any) -> Iterator[subprocess.Popen]:
    """A real Celery worker with the embedded beat (matchmaking, ratings) on the test database."""
    if _redis_ok():
        import redis

        broker_url, options = REDIS_URL, {}
        redis.Redis.from_url(REDIS_URL).flushdb()
    else:
        broker = data_dir / "broker"
        for sub in ("queue", "processed", "control"):
            (broker / sub).mkdir(parents=True, exist_ok=True)
        options = {
            "data_folder_in": str(broker / "queue"),
            "data_folder_out": str(broker / "queue"),
            "processed_folder": str(broker / "processed"),
            "control_folder": str(broker / "control"),
            "store_processed": False,
        }
        broker_url = "filesystem://"
    _point_celery_at(broker_url, options)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "core.settings",
        "DATABASE_URL": _database_url(),
        "CELERY_BROKER_URL": broker_url,
        "DATA_DIR": str(data_dir),
        "SANDBOX": "local",
        "WORKER_CONCURRENCY": "2",
        "SECRET_KEY": "browser-test-secret-" + "x" * 40,
        "PYTHONUNBUFFERED": "1",
    }
    log_path = tmp_path / "worker.log"
    name = f"web{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
    cmd = [sys.executable, "-m", "celery", "-A", "core", "worker", "--beat", "-l", "info", "-n", name]
    cmd += ["-Q", settings.CELERY_TASK_DEFAULT_QUEUE, "--without-mingle", "--without-gossip"]
    cmd += ["-s", str(data_dir / "beat-schedule")]
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(
            cmd, cwd=REPO, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
    _wait_for(
        lambda: " ready." in log_path.read_text(errors="replace") or proc.poll() is not None, 90, "worker"
    )
    if proc.poll() is not None:
        pytest.fail("worker exited at start:\n" + log_path.read_text(errors="replace")[-5000:])
    proc.log_path = log_path  # type: ignore[attr-defined]
    yield proc
    _stop_process_group(proc)
    _point_celery_at("memory://")


def _stop_process_group(proc: subprocess.Popen) -> None:
    """SIGTERM the worker's whole process group (pool children, beat) and wait until all are gone, so no
    database session outlives the test; SIGKILL whatever is left after 30 s."""
    deadline = time.monotonic() + 30
    sig = signal.SIGTERM
    while True:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        if proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.5)
        else:
            time.sleep(0.2)
        if time.monotonic() > deadline:
            sig = signal.SIGKILL
    proc.wait()


def _shot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def _sign_up(page: Any, base: str, email: str, name: str) -> None:
    page.goto(base + "/accounts/signup/")
    page.fill("#id_email", email)
    page.fill("#id_display_name", name)
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    page.click("main form button[type=submit]")
    page.wait_for_url("**/upload/")


def _upload(page: Any, base: str, player: str, name: str, tmp_path: Path) -> int:
    archive = tmp_path / f"{name}.zip"
    archive.write_bytes(zip_folder(EXAMPLES_DIR / player))
    page.goto(base + "/upload/")
    page.select_option("#id_environment", "connect-four")
    page.fill("#id_name", name)
    page.set_input_files("#id_file", str(archive))
    page.click("main form button[type=submit]")
    page.wait_for_url("**/revisions/*/")
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


def _wait_until_ranked(page: Any, worker: Any, what: str) -> None:
    try:
        page.wait_for_selector(
            "[data-testid=revision-steps][data-state=ELIGIBLE]", timeout=PIPELINE_TIMEOUT_S * 1000
        )
    except Exception:
        pytest.fail(
            f"{what} was not ranked; worker log:\n" + worker.log_path.read_text(errors="replace")[-6000:]
        )


def test_upload_build_rank_and_replay_in_a_browser(browser, live_server, worker, tmp_path):
    from django.db import connections

    try:
        _journey(browser, live_server, worker, tmp_path)
    finally:
        # ORM calls made while Playwright drives the browser open their connection in Playwright's
        # context; close it here, or it would outlive the test and block dropping the test database.
        connections.close_all()


def _journey(browser: Any, live_server: Any, worker: Any, tmp_path: Path) -> None:
    from tests.web import factories

    factories.environment("connect-four")  # the games, as `manage.py sync_environments` makes them
    base = live_server.url
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    _sign_up(page, base, "ada@example.com", "Ada")
    _shot(page, "upload")
    minimax_id = _upload(page, base, "minimax", "minimax", tmp_path)
    # The progress panel is live: it advances while we watch, without a reload by us.
    page.wait_for_selector("[data-testid=revision-steps]")
    _shot(page, "revision-progress")
    _wait_until_ranked(page, worker, "minimax")
    assert "Ranked" in page.inner_text("[data-testid=revision-headline]")
    assert page.locator("[data-testid=build-log]").count() == 1  # the owner sees the build log
    _shot(page, "revision-ranked")

    _upload(page, base, "random", "random", tmp_path)
    _wait_until_ranked(page, worker, "random")

    # The ladder's matchmaking (beat) schedules a duel; the worker plays it; ratings consume it.
    duel = _wait_for(
        lambda: Duel.objects.filter(state=Duel.State.FINISHED, rated=True).first(),
        PIPELINE_TIMEOUT_S,
        "a rated ladder duel",
    )
    assert Rating.objects.filter(matches__gt=0).count() == 2

    page.goto(base + "/games/connect-four/")
    board = page.inner_text("[data-testid=leaderboard]")
    assert "minimax" in board and "random" in board
    _shot(page, "game-leaderboard")

    page.goto(base + f"/duels/{duel.pk}/")
    _shot(page, "duel")
    page.click("[data-testid=matches] a.btn >> nth=0")
    page.wait_for_selector("[data-testid=replay-stage]")
    counter = page.locator("[data-testid=replay-counter]")
    last = int(counter.inner_text().split("/")[1])
    assert counter.inner_text().startswith("Move 0 /")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert counter.inner_text() == f"Move 3 / {last}"
    assert page.url.endswith("#move=3")
    page.keyboard.press("ArrowLeft")
    assert counter.inner_text() == f"Move 2 / {last}"
    page.keyboard.press("End")
    assert counter.inner_text() == f"Move {last} / {last}"
    assert (
        page.locator(
            "[data-testid=replay-stage] svg, [data-testid=replay-stage] canvas, "
            "[data-testid=replay-stage] div"
        ).count()
        > 0
    )
    _shot(page, "replay")
    # A shared link opens at its move.
    page.goto(page.url.split("#")[0] + "#move=5")
    page.wait_for_selector("[data-testid=replay-counter]")
    assert page.locator("[data-testid=replay-counter]").inner_text() == f"Move 5 / {last}"

    page.goto(base + f"/competitors/{Revision.objects.get(pk=minimax_id).competitor_id}/")
    _shot(page, "competitor")
    page.goto(base + "/")
    _shot(page, "home")
    assert errors == [], errors

    # Someone else cannot read Ada's private build log.
    other = browser.new_context(viewport={"width": 1280, "height": 900})
    intruder = other.new_page()
    _sign_up(intruder, base, "eve@example.com", "Eve")
    intruder.goto(base + f"/revisions/{minimax_id}/")
    assert intruder.locator("[data-testid=build-log]").count() == 0
    assert "visible to the owner only" in intruder.content()
    response = intruder.request.get(base + f"/api/revisions/{minimax_id}/logs/")
    assert response.status == 404
    other.close()
    context.close()


def test_first_visit_to_a_rated_agent_with_only_what_the_site_shows(browser, live_server, worker, tmp_path):
    from django.db import connections

    try:
        _first_visit(browser, live_server, worker, tmp_path)
    finally:
        connections.close_all()


def _first_visit(browser: Any, live_server: Any, worker: Any, tmp_path: Path) -> None:
    import io
    import json

    from core.management.commands.load_example_players import load_example_players
    from tests.web import factories

    factories.environment("connect-four")  # the games, as `manage.py sync_environments` makes them
    load_example_players("demo@example.com", ("random",))  # the demo opponents prepare_dev.sh loads
    base = live_server.url
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    # A phone first: the home page fits 390 px and its header is one row.
    phone = browser.new_context(viewport={"width": 390, "height": 844})
    small = phone.new_page()
    small.goto(base + "/")
    assert small.evaluate("document.documentElement.scrollWidth") <= 390
    assert small.evaluate("document.querySelector('.site-header').getBoundingClientRect().height") < 70
    _shot(small, "walk-home-390")
    phone.close()

    # Sign up from the header, as a visitor would.
    page.goto(base + "/")
    page.click("header >> text=Sign up")
    page.fill("#id_email", "newcomer@example.com")
    page.fill("#id_display_name", "Newcomer")
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    page.click("main form button[type=submit]")
    page.wait_for_url("**/upload/")
    assert "at most 50 MB" in page.inner_text("main")
    too_big = tmp_path / "weights-and-all.zip"
    with too_big.open("wb") as fh:
        fh.truncate(51 * 1024 * 1024)
    page.set_input_files("#id_file", str(too_big))
    assert "the limit is 50 MB" in page.inner_text("[data-testid=upload-size-error]")  # before sending

    # The guide is one click away; the game page offers the starter kit.
    page.click("header >> text=Write an agent")
    page.wait_for_selector("[data-testid=guide]")
    page.click("header >> text=Games")
    page.click("main >> text=Connect Four")
    page.wait_for_url("**/games/connect-four/")
    with page.expect_download() as download:
        page.click("[data-testid=starter-kit]")
    kit = tmp_path / download.value.suggested_filename
    download.value.save_as(kit)
    assert kit.name == "connect-four-starter.zip"

    # Upload it unchanged from the game page's button; watch it get ranked.
    page.click("main >> text=Upload an agent")
    page.wait_for_url("**/upload/?environment=connect-four")
    assert page.input_value("#id_environment") == "connect-four"
    page.fill("#id_name", "my-first-bot")
    page.set_input_files("#id_file", str(kit))
    page.click("main form button[type=submit]")
    page.wait_for_url("**/revisions/*/")
    revision_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
    _wait_until_ranked(page, worker, "the starter kit")
    _shot(page, "walk-ranked")
    revision = Revision.objects.select_related("competitor").get(pk=revision_id)

    # The ladder pairs it with the demo opponent; the duel is rated.
    duel = _wait_for(
        lambda: (
            Duel.objects.filter(state=Duel.State.FINISHED, rated=True)
            .filter(models.Q(revision_1=revision) | models.Q(revision_2=revision))
            .first()
        ),
        PIPELINE_TIMEOUT_S,
        "a rated ladder duel of the starter kit",
    )
    page.goto(base + f"/competitors/{revision.competitor_id}/")
    assert "passed" in page.inner_text("[data-testid=smoke-verdict]")
    assert page.locator("[data-testid=history-row]").count() >= 1
    page.click(f"[data-testid=duel-history] a[href='/duels/{duel.pk}/']")
    page.wait_for_url(f"**/duels/{duel.pk}/")
    seat = 1 if duel.revision_1_id == revision_id else 2
    change = page.inner_text(f"[data-testid=rating-change-{seat}]")
    assert "BEFORE" in change.upper() and "#" in change  # mu, sigma, mu - 3 sigma and rank, before/after
    assert page.inner_text("[data-testid=duel-headline]")
    _shot(page, "walk-duel")

    # Its first match, from the empty board.
    page.click("[data-testid=matches] a.btn >> nth=0")
    page.wait_for_selector("[data-testid=replay-stage]")
    assert page.locator("[data-testid=replay-stage] .rl-piece").count() == 0
    assert page.inner_text("[data-testid=replay-caption]").startswith("Initial position")
    page.keyboard.press("ArrowRight")
    assert page.inner_text("[data-testid=replay-caption]").startswith("Move 1: ")
    page.keyboard.press("End")
    assert "Result: " in page.inner_text("[data-testid=replay-caption]")
    _shot(page, "walk-replay")

    # The API token from the profile page (shown once, on the page that made it) works with the client.
    page.click("header >> text=Newcomer")
    page.click("[data-testid=rotate-token]")
    token = page.inner_text("[data-testid=api-token-value]").strip()
    from rl_arena_client import cli

    out = io.StringIO()
    saved = {k: os.environ.get(k) for k in ("RL_ARENA_SERVER", "RL_ARENA_TOKEN", "RL_ARENA_CONFIG")}
    os.environ.update(RL_ARENA_SERVER=base, RL_ARENA_TOKEN=token, RL_ARENA_CONFIG=str(tmp_path / "cfg.json"))
    try:
        assert cli.main(["status"], out=out) == 0
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    row = next(line for line in out.getvalue().splitlines() if "my-first-bot" in line)
    assert "v1" in row and "ELIGIBLE" in row

    # The API's front door and the site's own 404.
    api = json.loads(page.request.get(base + "/api/").text())
    assert api["duels"].endswith("/api/duels/")
    page.goto(base + "/no-such-page/")
    assert "Page not found" in page.inner_text("main")
    assert errors == [], errors
    context.close()


def test_screenshots_folder_is_outside_version_control():
    assert shutil.which("git") is None or "/data/*" in (REPO / ".gitignore").read_text()
