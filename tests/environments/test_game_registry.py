"""The game registry: discovery by folder, lookups by slug, and validation of info.yml."""

from __future__ import annotations

import textwrap
import uuid

import pytest

from environments import (
    Game,
    GameRegistryError,
    InvalidGameInfoError,
    UnknownGameError,
    all_slugs,
    get_game,
    get_info,
    load_info,
    parse_info,
    static_dir,
)
from environments.registry import discover_games

VALID_INFO = {
    "slug": "test-game",
    "name": "Test game",
    "description": "Rules.",
    "matches_per_duel": 10,
    "move_time_limit": 1.0,
    "init_time_limit": 10,
    "memory_limit_mb": 512,
    "cpu_limit": 1.0,
    "smoke_test_matches": 4,
}

RULES_PY = textwrap.dedent(
    """
    from environments.tic_tac_toe.rules import TicTacToe


    class Other(TicTacToe):
        slug = "{slug}"


    GAME = Other()
    """
)


def write_game(root, folder: str, slug: str, rules: str | None = None) -> None:
    """A game folder under ``root`` whose rules reuse tic-tac-toe under another slug."""
    path = root / folder
    path.mkdir(parents=True)
    (path / "__init__.py").write_text("")
    info = "\n".join(f"{k}: {v if k != 'slug' else slug}" for k, v in VALID_INFO.items())
    (path / "info.yml").write_text(info + "\n")
    (path / "rules.py").write_text(rules if rules is not None else RULES_PY.format(slug=slug))


@pytest.fixture
def games_package(tmp_path, monkeypatch):
    """An empty importable package to hold test game folders; returns (its folder, its name)."""
    name = f"extra_games_{uuid.uuid4().hex}"  # unique: imported modules stay in sys.modules
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    return package, name


def test_all_slugs_lists_the_board_games_sorted():
    slugs = all_slugs()
    assert {"tic-tac-toe", "connect-four", "quarto"} <= set(slugs)
    assert slugs == sorted(slugs)


@pytest.mark.parametrize("slug", ["tic-tac-toe", "connect-four", "quarto"])
def test_get_game_returns_the_rules_for_a_slug(slug):
    game = get_game(slug)
    assert isinstance(game, Game)
    assert game.slug == slug


def test_an_unknown_slug_raises_a_key_error_listing_the_known_games():
    with pytest.raises(UnknownGameError) as excinfo:
        get_game("chess")
    assert isinstance(excinfo.value, KeyError)
    message = str(excinfo.value)
    assert "unknown game 'chess'" in message
    assert "connect-four" in message and "quarto" in message and "tic-tac-toe" in message


def test_package_names_are_not_slugs():
    with pytest.raises(UnknownGameError):
        get_info("connect_four")


def test_get_info_reads_the_games_info_yml():
    info = get_info("connect-four")
    assert info.slug == "connect-four"
    assert info.name == "Connect Four"
    assert info.matches_per_duel == 10
    assert "## Actions" in info.description


def test_get_info_returns_an_object_the_caller_may_change():
    get_info("quarto").extra["scribbled"] = True
    assert "scribbled" not in get_info("quarto").extra


def test_static_dir_holds_the_renderer():
    assert (static_dir("quarto") / "renderer.js").is_file()


def test_a_valid_info_parses_with_unknown_keys_kept_as_extra():
    info = parse_info({**VALID_INFO, "synthetic": True})
    assert info.matches_per_duel == 10
    assert info.init_time_limit == 10.0
    assert info.extra == {"synthetic": True}
    assert info.time_bank_s == 0.0  # optional: no bank unless the game sets one
    assert parse_info({**VALID_INFO, "time_bank_s": 2.5}).time_bank_s == 2.5


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"matches_per_duel": 7}, "matches_per_duel must be an even integer > 0, got 7"),
        ({"matches_per_duel": 0}, "matches_per_duel must be an even integer > 0, got 0"),
        ({"matches_per_duel": True}, "matches_per_duel must be an even integer > 0, got True"),
        ({"smoke_test_matches": 3}, "smoke_test_matches must be an even integer > 0, got 3"),
        ({"move_time_limit": 0}, "move_time_limit must be a finite number > 0"),
        ({"move_time_limit": "1s"}, "move_time_limit must be a finite number > 0, got '1s'"),
        ({"init_time_limit": -1}, "init_time_limit must be a finite number > 0"),
        ({"memory_limit_mb": 0.5}, "memory_limit_mb must be an integer > 0"),
        ({"cpu_limit": float("inf")}, "cpu_limit must be a finite number > 0"),
        ({"slug": "Connect_Four"}, "slug must be lowercase letters/digits"),
        ({"name": "  "}, "name must be a non-empty string"),
        ({"description": None}, "description must be a non-empty string"),
        ({"time_bank_s": -1}, "time_bank_s must be a finite number >= 0, got -1"),
        ({"time_bank_s": "10s"}, "time_bank_s must be a finite number >= 0"),
    ],
)
def test_invalid_values_are_rejected_with_the_key_and_the_reason(change, message):
    with pytest.raises(InvalidGameInfoError, match=message.replace("(", r"\(")):
        parse_info({**VALID_INFO, **change}, source="x/info.yml")


def test_every_problem_is_reported_at_once():
    data = {k: v for k, v in VALID_INFO.items() if k not in ("name", "cpu_limit")}
    with pytest.raises(InvalidGameInfoError) as excinfo:
        parse_info({**data, "matches_per_duel": 3}, source="x/info.yml")
    message = str(excinfo.value)
    assert message.startswith("x/info.yml: ")
    assert "missing required key 'name'" in message
    assert "missing required key 'cpu_limit'" in message
    assert "matches_per_duel" in message


def test_info_must_be_a_mapping():
    with pytest.raises(InvalidGameInfoError, match="must be a YAML mapping, got list"):
        parse_info([1, 2])


def test_unparsable_yaml_is_reported_with_the_path(tmp_path):
    path = tmp_path / "info.yml"
    path.write_text("slug: [unclosed\n")
    with pytest.raises(InvalidGameInfoError, match="invalid YAML"):
        load_info(path)


def test_a_missing_info_file_is_reported(tmp_path):
    with pytest.raises(InvalidGameInfoError, match="cannot read"):
        load_info(tmp_path / "info.yml")


def test_a_new_game_folder_is_discovered_without_editing_the_registry(games_package):
    root, package = games_package
    write_game(root, "other_game", "other-game")
    (root / "not_a_game").mkdir()  # no info.yml, no rules.py: ignored
    games = discover_games(root, package)
    assert list(games) == ["other-game"]
    assert games["other-game"].game.slug == "other-game"
    assert games["other-game"].folder == root / "other_game"


def test_a_rules_module_without_game_is_an_error(games_package):
    root, package = games_package
    write_game(root, "no_game", "no-game", rules="X = 1\n")
    with pytest.raises(GameRegistryError, match="must define a module-level GAME"):
        discover_games(root, package)


def test_the_folder_must_be_named_after_the_slug(games_package):
    root, package = games_package
    write_game(root, "misnamed", "other-game")
    with pytest.raises(GameRegistryError, match="folder name must be the slug with underscores"):
        discover_games(root, package)


def test_game_slug_and_info_slug_must_agree(games_package):
    root, package = games_package
    write_game(root, "some_game", "some-game", rules=RULES_PY.format(slug="different"))
    with pytest.raises(GameRegistryError, match=r"GAME\.slug is 'different' but info\.yml says 'some-game'"):
        discover_games(root, package)
