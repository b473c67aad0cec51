"""Each board game's ``static/renderer.js``, run in Node on a tiny DOM stand-in (renderer_harness.js).

Checks that drawing is a pure function of the state, that the last action and the winning line are marked,
and that the clickable elements offered with ``options.onAction`` produce exactly the legal actions.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from environments import all_slugs, get_game, get_info, static_dir
from environments.registry import ENVIRONMENTS_DIR

NODE = shutil.which("node")
HARNESS = Path(__file__).with_name("renderer_harness.js")
BOARD_GAMES = [slug for slug in all_slugs() if not get_info(slug).extra.get("synthetic")]

pytestmark = pytest.mark.skipif(NODE is None, reason="renderer tests need Node.js (apt-get install nodejs)")


def random_playout(slug: str, seed: int) -> list[dict]:
    game = get_game(slug)
    rng = random.Random(seed)
    state = game.initial_state(seed)
    states = [state]
    while not game.is_over(state):
        state = game.apply(state, rng.choice(game.legal_actions(state)))
        states.append(state)
    return states


def states_to_draw(slug: str) -> list[dict]:
    """The sample replay plus the longest of a few seeded random playouts (reaching late-game turns)."""
    sample = json.loads((static_dir(slug) / "sample_states.json").read_text(encoding="utf-8"))
    longest = max((random_playout(slug, seed) for seed in range(30)), key=len)
    game = get_game(slug)
    # Live pages and running replays draw what a seat or a spectator may see (hidden cards as null).
    redacted = (
        [game.redact(s, viewer) for s in sample for viewer in (1, None)] if game.hidden_information else []
    )
    return sample + longest + redacted


@pytest.fixture(scope="module", params=BOARD_GAMES)
def drawn(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    slug = request.param
    states = states_to_draw(slug)
    path = tmp_path_factory.mktemp("render") / f"{slug}.json"
    path.write_text(json.dumps(states), encoding="utf-8")
    result = subprocess.run(
        [
            NODE,
            str(HARNESS),
            str(ENVIRONMENTS_DIR / "static" / "renderers.js"),
            str(static_dir(slug) / "renderer.js"),
            slug,
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return slug, states, json.loads(result.stdout)


def test_drawing_replaces_the_container_content(drawn):
    _, _, reports = drawn
    assert all(not r["kept_old_content"] for r in reports)


def test_drawing_is_a_pure_function_of_the_state(drawn):
    _, _, reports = drawn
    for report in reports:
        assert report["markup"] == report["markup_again"]
        assert report["state_unchanged"]


def test_the_winning_line_is_marked_exactly_when_someone_won(drawn):
    slug, states, reports = drawn
    game = get_game(slug)
    for state, report in zip(states, reports, strict=True):
        assert ("rl-winning-line" in report["classes"]) == (game.winner(state) is not None)


def test_the_last_action_is_marked_once_pieces_are_on_the_board(drawn):
    _, states, reports = drawn
    for state, report in zip(states, reports, strict=True):
        if "rl-last-action" in report["classes"]:
            assert state["last_action"] is not None
    for playout_start in (0, next(i for i in range(1, len(states)) if states[i]["last_action"] is None)):
        assert all("rl-last-action" in r["classes"] for r in reports[playout_start + 2 : playout_start + 4])


def test_clickable_moves_are_exactly_the_legal_actions(drawn):
    slug, states, reports = drawn
    game = get_game(slug)
    for state, report in zip(states, reports, strict=True):
        assert report["actions"] == game.legal_actions(state)
