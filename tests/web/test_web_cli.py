"""The ``rl-arena`` client against a live server: login, submit a folder, status."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from rl_arena_client import agents, cli

from core.management.commands.load_example_players import EXAMPLES_DIR
from core.models import Revision, StoredAgentData
from run_duel.agent_data import archive_of, files_of
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
    assert rev.competitor.owner == alice and rev.is_public and not rev.wipe_data
    assert "cli-bot revision 1" in out
    code, out = _run(
        "submit", "connect-four", "cli-bot", str(EXAMPLES_DIR / "random"), "--wipe-data", "--no-wait"
    )
    assert code == 0, out
    assert Revision.objects.get(competitor__name="cli-bot", version=2).wipe_data


def test_submit_uploads_a_zip_as_it_is(cli_env, alice, env, tmp_path):
    import hashlib

    _run("login", "--email", "alice@example.com")
    archive = tmp_path / "bot.zip"
    archive.write_bytes(agents.zip_folder(EXAMPLES_DIR / "random"))
    code, out = _run("submit", "connect-four", "zip-bot", str(archive), "--no-wait")
    assert code == 0, out
    rev = Revision.objects.get(competitor__name="zip-bot")
    assert rev.content_hash == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert "zip-bot revision 1" in out


def test_submit_refuses_a_corrupt_zip_a_zip_without_entry_and_a_missing_path(cli_env, alice, env, capsys):
    _run("login", "--email", "alice@example.com")
    corrupt = cli_env / "corrupt.zip"
    corrupt.write_bytes(b"PK\x03\x04 this is not really a zip")
    code, _ = _run("submit", "connect-four", "bad-bot", str(corrupt), "--no-wait")
    assert code == 1 and "not a valid zip: " in capsys.readouterr().err
    empty = cli_env / "empty.zip"
    with zipfile.ZipFile(empty, "w") as zf:
        zf.writestr("notes.txt", "no agent here")
    code, _ = _run("submit", "connect-four", "bad-bot", str(empty), "--no-wait")
    assert code == 1 and "holds no entry file" in capsys.readouterr().err
    code, _ = _run("submit", "connect-four", "bad-bot", str(cli_env / "missing.zip"), "--no-wait")
    assert code == 1 and "no such folder or zip" in capsys.readouterr().err
    assert not Revision.objects.filter(competitor__name="bad-bot").exists()


def test_submit_compiles_the_python_of_a_zip_before_uploading(cli_env, alice, env, capsys):
    _run("login", "--email", "alice@example.com")
    broken = cli_env / "broken.zip"
    with zipfile.ZipFile(broken, "w") as zf:
        zf.writestr("bot/main.py", "def agent(obs, config)\n    return 0\n")
    code, _ = _run("submit", "connect-four", "broken-bot", str(broken), "--no-wait")
    assert code == 1 and "main.py, line 1" in capsys.readouterr().err
    assert not Revision.objects.filter(competitor__name="broken-bot").exists()


def test_check_tells_a_corrupt_zip_from_a_missing_path(tmp_path, capsys):
    corrupt = tmp_path / "agent.zip"
    corrupt.write_bytes(b"not a zip at all")
    assert _run("check", "--env", "connect-four", str(corrupt))[0] == 1
    err = capsys.readouterr().err
    assert "not a valid zip: " in err and "no such folder" not in err
    # a zip whose member is damaged (its CRC no longer matches) is not valid either
    damaged = tmp_path / "damaged.zip"
    with zipfile.ZipFile(damaged, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("player.py", "class Player:\n    pass\n" * 20)
    data = bytearray(damaged.read_bytes())
    data[data.index(b"class Player") + 3] ^= 0x20
    damaged.write_bytes(bytes(data))
    assert _run("check", "--env", "connect-four", str(damaged))[0] == 1
    assert "not a valid zip: 'player.py' is damaged" in capsys.readouterr().err
    assert _run("check", "--env", "connect-four", str(tmp_path / "nothing.zip"))[0] == 1
    assert "no such folder or zip" in capsys.readouterr().err


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


def test_zip_folder_uploads_cpp_and_javascript_agents_as_the_arena_detects_them(tmp_path):
    from agent_uploads.languages import ENTRY_FILES
    from agent_uploads.upload import read_upload

    assert agents.UPLOAD_ENTRY_FILES == ENTRY_FILES
    for kit in ("random_cpp", "random_js"):
        archive = agents.zip_folder(EXAMPLES_DIR / kit)
        assert agents.syntax_error(EXAMPLES_DIR / kit) is None  # nothing Python to compile
        language = read_upload(io.BytesIO(archive)).language
        assert language is not None and language.key == ("cpp" if kit == "random_cpp" else "javascript")


# --- download ------------------------------------------------------------------------------------------


def test_download_fetches_duels_with_replays_and_only_the_owners_logs(cli_env, alice, bob, env):
    from tests.web import factories

    mine = factories.competitor(alice, env, "mine")
    theirs = factories.competitor(bob, env, "theirs")
    for comp, text in ((mine, b"alice's"), (theirs, b"bob's")):
        archive = archive_of({"memory.txt": text})
        StoredAgentData.objects.create(competitor=comp, archive=archive, generation=1)
    duels = [factories.duel(mine, theirs, num_matches=2, initial_state=False) for _ in range(3)]
    out_dir = cli_env / "results"
    _run("login", "--email", "alice@example.com")
    code, out = _run("download", "mine", "--out", str(out_dir))
    assert code == 0, out
    assert "3 duels (6 matches) fetched" in out and "logs of 1 revisions" in out
    saved = json.loads((out_dir / "duels" / f"{duels[0].pk}.json").read_text())
    assert len(saved["matches"]) == 2 and saved["matches"][0]["states"][0]["board"][5] == [0] * 7
    assert saved["player_1_log"] == "player 1 says hello\n" and saved["player_2_log"] is None
    logs = json.loads((out_dir / "revisions" / "v1.json").read_text())
    assert logs["smoke_test_state"] == "PASSED"
    assert files_of((out_dir / "data.tar").read_bytes()) == {"memory.txt": b"alice's"}
    # Again: nothing new to fetch.
    code, out = _run("download", str(mine.pk), "--out", str(out_dir))
    assert "0 duels (0 matches) fetched, 3 already there" in out
    # Someone else's competitor: its duels, without its logs or revisions (Alice's own side stays hers).
    code, out = _run("download", str(theirs.pk), "--out", str(cli_env / "other"), "--limit", "2")
    assert "2 duels (4 matches) fetched" in out and "logs of 0 revisions" in out
    assert "data folder" not in out and not (cli_env / "other" / "data.tar").exists()  # Bob's, not hers
    other = json.loads(next((cli_env / "other" / "duels").iterdir()).read_text())
    assert other["player_2_log"] is None and other["player_1_log"] == "player 1 says hello\n"


# --- local ---------------------------------------------------------------------------------------------


def test_a_local_duel_prints_each_match_and_the_score(tmp_path):
    output = tmp_path / "duel.json"
    code, out = _run(
        "duel", "--env", "tic-tac-toe", "minimax", "random", "--matches", "4", "--output", str(output)
    )
    assert code == 0, out
    assert out.count("moved first") == 4
    assert out.splitlines()[-2].startswith("minimax ")  # the score line
    duel = json.loads(output.read_text())
    assert duel["num_matches"] == 4 and duel["player_1_errors"] == 0
    assert duel["player_1_score"] >= 2  # minimax never loses tic-tac-toe


def test_a_local_duel_names_the_agent_that_erred(tmp_path):
    broken = EXAMPLES_DIR / "broken" / "crash_mid_match"
    code, out = _run("duel", "--env", "connect-four", str(broken), "random", "--matches", "2")
    assert code == 0
    assert "crash_mid_match erred (CRASH)" in out
    assert "crash_mid_match (player 1) raised RuntimeError" in out


def test_a_local_tournament_ranks_agents_with_trueskill(tmp_path):
    starter = EXAMPLES_DIR / "starter_kits" / "tic_tac_toe"
    output = tmp_path / "t.json"
    code, out = _run(
        "tournament",
        "--env",
        "tic-tac-toe",
        str(starter),
        "random",
        "minimax",
        "--matches",
        "4",
        "--output",
        str(output),
    )
    assert code == 0, out
    assert "3 agents, 3 duels (round robin)" in out
    table = json.loads(output.read_text())["table"]
    assert [row["rank"] for row in table] == [1, 2, 3]
    assert table[-1]["name"] == "random"  # loses to both
    assert all(row["duels"] == 2 for row in table)
    assert table[0]["skill"] == pytest.approx(table[0]["mu"] - 3 * table[0]["sigma"])


def test_check_runs_the_arenas_smoke_test(tmp_path):
    code, out = _run("check", "--env", "connect-four", str(EXAMPLES_DIR / "starter_kits" / "connect_four"))
    assert code == 0 and out.startswith("passed: 4 self-play matches without errors")
    code, out = _run("check", "--env", "connect-four", str(EXAMPLES_DIR / "broken" / "illegal_action"))
    assert code == 1 and out.startswith("FAILED: match 1 of 4: INVALID_ACTION")


def test_check_refuses_a_syntax_error_without_running_it(tmp_path):
    (tmp_path / "player.py").write_text("class Player:\n    def start(self, state valid_actions): ...\n")
    code, out = _run("check", "--env", "connect-four", str(tmp_path))
    assert code == 1 and "player.py, line 2" in out


def test_local_commands_explain_unknown_games_and_agents(capsys):
    assert _run("duel", "--env", "chess", "random", "random")[0] == 1
    assert "chess" in capsys.readouterr().err
    assert _run("duel", "--env", "connect-four", "no-such-agent", "random")[0] == 1
    assert "bundled opponents: minimax, random" in capsys.readouterr().err
