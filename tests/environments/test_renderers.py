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


def run_harness(slug: str, states: list[dict], folder: Path, options: dict | None = None) -> list[dict]:
    """The harness's report on each of ``states`` drawn with ``options`` added."""
    path = folder / f"{slug}.json"
    path.write_text(json.dumps(states), encoding="utf-8")
    command = [
        NODE,
        str(HARNESS),
        str(ENVIRONMENTS_DIR / "static" / "renderers.js"),
        str(static_dir(slug) / "renderer.js"),
        slug,
        str(path),
    ]
    if options:
        command.append(json.dumps(options))
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module", params=BOARD_GAMES)
def drawn(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    slug = request.param
    states = states_to_draw(slug)
    return slug, states, run_harness(slug, states, tmp_path_factory.mktemp("render"))


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


@pytest.mark.parametrize("slug", [s for s in BOARD_GAMES if get_game(s).hidden_information])
def test_a_seat_is_offered_its_own_moves_on_the_view_it_is_sent(slug, tmp_path):
    """Live play draws ``redact(state, seat)`` with ``options.seat``: the clickable moves are exactly that
    seat's legal moves (a simultaneous Goofspiel turn included), none when it is not its turn."""
    game = get_game(slug)
    states = [s for s in random_playout(slug, 3) if not game.is_over(s)]
    for seat in (0, 1):
        views = [game.redact(state, seat) for state in states]
        reports = run_harness(slug, views, tmp_path, {"seat": seat})
        for state, report in zip(states, reports, strict=True):
            assert report["actions"] == game.legal_actions_for(state, seat)
