"""What an upload is told before anything is built: the size limit (stated, and a 413 rather than a server
error on the real development server), Python syntax errors, and Kaggle-style agents from the CLI."""

from __future__ import annotations

import http.client
import io
import os
import urllib.parse

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rl_arena_client import cli

from core.management.commands.load_example_players import EXAMPLES_DIR, zip_folder
from core.models import Revision
from tests.web.factories import PASSWORD
from tests.zips import zip_bytes

pytestmark = pytest.mark.django_db


def _raw_post(url: str, path: str, length: int, content_type: str) -> tuple[int, str, bytes]:
    """POST ``length`` bytes to a live server the way a browser or the CLI does; (status, type, body)."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    try:
        conn.putrequest("POST", path)
        conn.putheader("Content-Type", content_type)
        conn.putheader("Content-Length", str(length))
        conn.endheaders()
        chunk = b"\0" * (1 << 20)
        sent = 0
        try:
            while sent < length:
                conn.send(chunk[: min(len(chunk), length - sent)])
                sent += min(len(chunk), length - sent)
        except (BrokenPipeError, ConnectionResetError):
            pass  # a server may stop reading once it has answered; the answer is still there
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type", ""), response.read()
    finally:
        conn.close()


def test_the_upload_page_states_the_size_limit(alice_client, settings):
    html = alice_client.get(reverse("web:upload")).content.decode()
    assert "at most 50 MB" in html
    assert f'data-max-bytes="{settings.SUBMISSION_MAX_BYTES}"' in html
    assert "web/js/upload.js" in html


def test_a_60_mb_upload_gets_a_413_page_from_the_development_server(live_server, settings):
    """Django's own server (as ``runserver`` and ``prepare_dev.sh`` run it) used to turn this into a bare
    500, because the 413 carried a hop-by-hop ``Connection`` header."""
    status, ctype, body = _raw_post(
        live_server.url, "/upload/", 60 * 1024 * 1024, "multipart/form-data; boundary=x"
    )
    assert status == 413
    assert ctype.startswith("text/html")
    text = body.decode()
    assert "Upload too large" in text and "the limit is 50 MB" in text
    assert 'class="site-header"' in text  # the site's own page, not a server error


def test_a_60_mb_api_upload_gets_a_json_413_from_the_development_server(live_server, settings):
    status, ctype, body = _raw_post(
        live_server.url, "/api/revisions/", 60 * 1024 * 1024, "multipart/form-data; boundary=x"
    )
    assert status == 413 and ctype.startswith("application/json")
    assert "the limit is 50 MB" in body.decode()


@pytest.fixture
def cli_env(monkeypatch, tmp_path, live_server):
    monkeypatch.setenv("RL_ARENA_CONFIG", str(tmp_path / "config.json"))
    monkeypatch.setenv("RL_ARENA_SERVER", live_server.url)
    monkeypatch.setenv("RL_ARENA_PASSWORD", PASSWORD)
    monkeypatch.delenv("RL_ARENA_TOKEN", raising=False)
    return tmp_path


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out=out), out.getvalue()


def test_the_cli_refuses_a_zip_over_the_arenas_limit_before_sending_it(cli_env, alice, env, settings, capsys):
    settings.SUBMISSION_MAX_BYTES = 1024 * 1024
    agent = cli_env / "big_agent"
    agent.mkdir()
    (agent / "player.py").write_text((EXAMPLES_DIR / "random" / "player.py").read_text())
    (agent / "weights.bin").write_bytes(os.urandom(2 * 1024 * 1024))  # incompressible
    assert _run("login", "--email", "alice@example.com")[0] == 0
    code, _ = _run("submit", "connect-four", "big-bot", str(agent), "--no-wait")
    assert code == 1
    assert "over the arena's 1 MB limit" in capsys.readouterr().err
    assert not Revision.objects.exists()


def test_a_syntax_error_is_refused_at_upload_with_pythons_message(alice_client, env):
    bad = zip_bytes(
        {"player.py": "class Player:\n    def step(self, state valid_actions):\n        return 0\n"}
    )
    response = alice_client.post(
        reverse("web:upload"),
        {"environment": env.slug, "name": "typo-bot", "file": SimpleUploadedFile("b.zip", bad)},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "Python cannot compile your agent: player.py, line 2" in html
    assert '<pre class="code-error">' in html  # the line and its caret keep their columns
    assert "def step(self, state valid_actions):" in html
    assert not Revision.objects.exists()


def test_a_syntax_error_in_a_module_beside_player_py_is_refused_too(alice_client, env):
    bad = zip_bytes({"bot/player.py": "import helper\n", "bot/helper.py": "x = (1,\n"})
    response = alice_client.post(
        reverse("web:upload"),
        {"environment": env.slug, "name": "typo-bot", "file": SimpleUploadedFile("b.zip", bad)},
    )
    assert response.status_code == 400
    assert "helper.py, line 1" in response.content.decode()


def test_the_api_refuses_a_syntax_error_with_the_same_message(client, alice, env):
    client.force_login(alice)
    bad = zip_bytes({"player.py": "def agent(obs, conf)\n    return 0\n"})
    response = client.post(
        "/api/revisions/",
        {"environment": env.slug, "competitor_name": "typo", "file": SimpleUploadedFile("b.zip", bad)},
    )
    assert response.status_code == 400
    assert "player.py, line 1" in response.json()["file"][0]


def test_a_valid_agent_still_uploads(alice_client, env):
    response = alice_client.post(
        reverse("web:upload"),
        {
            "environment": env.slug,
            "name": "fine",
            "file": SimpleUploadedFile("r.zip", zip_folder(EXAMPLES_DIR / "random")),
        },
    )
    assert response.status_code == 302


def test_the_cli_submits_a_kaggle_style_agent_that_the_web_accepts(cli_env, alice, env):
    assert _run("login", "--email", "alice@example.com")[0] == 0
    code, out = _run(
        "submit", "connect-four", "kaggle-bot", str(EXAMPLES_DIR / "kaggle_connectx"), "--no-wait"
    )
    assert code == 0, out
    rev = Revision.objects.get(competitor__name="kaggle-bot")
    assert rev.competitor.owner == alice


def test_the_cli_refuses_a_syntax_error_before_uploading(cli_env, alice, env, capsys):
    agent = cli_env / "typo"
    agent.mkdir()
    (agent / "player.py").write_text("class Player\n")
    assert _run("login", "--email", "alice@example.com")[0] == 0
    code, _ = _run("submit", "connect-four", "typo", str(agent), "--no-wait")
    assert code == 1
    assert "player.py, line 1" in capsys.readouterr().err
    assert not Revision.objects.exists()
