"""The ``rl-arena`` client against a live server: login, submit a folder, status."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from rl_arena_client import agents, cli

from core.management.commands.load_example_players import EXAMPLES_DIR
from core.models import Revision
from tests.web.factories import PASSWORD


@pytest.fixture
def cli_env(monkeypatch, tmp_path, live_server):
    """The client's config file in a temp folder, pointed at the live test server."""
    monkeypatch.setenv("RL_ARENA_CONFIG", str(tmp_path / "config.json"))
    monkeypatch.setenv("RL_ARENA_SERVER", live_server.url)
    monkeypatch.setenv("RL_ARENA_PASSWORD", PASSWORD)
    monkeypatch.delenv("RL_ARENA_TOKEN", raising=False)
    return tmp_path


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = cli.main(list(argv), out=out)
    return code, out.getvalue()


def test_login_saves_a_private_token(cli_env, alice):
    code, out = _run("login", "--email", "alice@example.com")
    assert code == 0, out
    config = cli_env / "config.json"
    assert len(json.loads(config.read_text())["token"]) == 40
    assert config.stat().st_mode & 0o777 == 0o600


def test_login_with_a_wrong_password_fails(cli_env, alice, monkeypatch, capsys):
    monkeypatch.setenv("RL_ARENA_PASSWORD", "wrong")
    code, _ = _run("login", "--email", "alice@example.com")
    assert code == 1
    assert "Wrong e-mail or password" in capsys.readouterr().err


def test_submit_zips_the_folder_and_uploads_a_revision(cli_env, alice, env):
    _run("login", "--email", "alice@example.com")
    code, out = _run(
        "submit", "connect-four", "cli-bot", str(EXAMPLES_DIR / "random"), "--public", "--no-wait"
    )
    assert code == 0, out
    rev = Revision.objects.get(competitor__name="cli-bot")
    assert rev.competitor.owner == alice and rev.is_public
    assert "cli-bot revision 1" in out


def test_status_lists_my_competitors(cli_env, alice, env):
    _run("login", "--email", "alice@example.com")
    _run("submit", "connect-four", "cli-bot", str(EXAMPLES_DIR / "random"), "--no-wait")
    code, out = _run("status")
    assert code == 0
    assert "connect-four" in out and "cli-bot" in out and "UPLOADED" in out


def test_commands_other_than_login_need_a_token(cli_env, db, capsys):
    assert _run("status")[0] == 1
    assert "rl-arena login" in capsys.readouterr().err


def test_progress_bar_fills_as_the_revision_advances():
    assert cli.progress_bar("UPLOADED", width=8) == "[--------] UPLOADED"
    assert cli.progress_bar("TESTING", width=8) == "[######--] TESTING"
    assert cli.progress_bar("ELIGIBLE", width=8) == "[########] ELIGIBLE"
    assert cli.progress_bar("BUILD_FAILED", width=4) == "[!!!!] BUILD_FAILED"


def test_zip_folder_skips_caches_and_requires_player_py(tmp_path):
    (tmp_path / "player.py").write_text("class Player: ...\n")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "player.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "model.onnx").write_bytes(b"\1\2")
    names = zipfile.ZipFile(io.BytesIO(agents.zip_folder(tmp_path))).namelist()
    assert sorted(names) == ["player.py", "weights/model.onnx"]
    (tmp_path / "player.py").unlink()
    with pytest.raises(agents.CliError, match=r"no player\.py"):
        agents.zip_folder(tmp_path)
