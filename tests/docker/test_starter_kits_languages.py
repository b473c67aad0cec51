"""The C++ and JavaScript starter kits: one per game, each compiles (C++) or loads (JavaScript) in its
language's base image with our harness, and answers a start message of its game with a legal action.

One container per language runs every kit over the harness's stdin/stdout transport (docs/PROTOCOL.md),
so the twelve kits cost two containers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dockertest_support import REPO

from builder.settings import BuilderSettings
from environments import get_game
from run_duel.sandbox.docker_client import get_client

pytestmark = pytest.mark.docker

KITS = REPO / "example_players" / "starter_kits"
HARNESS = REPO / "run_duel" / "harness"
GAMES = {
    "tic_tac_toe": "tic-tac-toe",
    "connect_four": "connect-four",
    "quarto": "quarto",
    "goofspiel": "goofspiel",
    "leduc_holdem": "leduc-holdem",
    "hidden_skill": "hidden-skill",
}
RUN = {
    "cpp": (  # compile the kits two at a time, -O0 (fast), then run each
        "ls /kits | xargs -P 2 -I NAME g++ -std=c++17 -O0 -I/harness -o /tmp/NAME /kits/NAME/main.cpp; "
        "for kit in /kits/*/; do name=$(basename $kit); "
        'echo "$name $(/tmp/$name < /messages/$name.txt | sed -n 2p)"; done'
    ),
    "javascript": (
        "for kit in /kits/*/; do name=$(basename $kit); "
        'echo "$name $(node /harness/arena_harness.js --agent-dir $kit < /messages/$name.txt | sed -n 2p)"; '
        "done"
    ),
}


@pytest.fixture(scope="module")
def messages(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[int]]]:
    """Per kit, a start message of its game (then close), and the legal actions of that position."""
    folder = tmp_path_factory.mktemp("messages")
    folder.chmod(0o755)
    legal = {}
    for kit, slug in GAMES.items():
        game = get_game(slug)
        state = game.initial_state()
        legal[kit] = [int(a) for a in game.legal_actions(state)]
        start = {"type": "start", "state": game.observation(state, 0).tolist(), "valid_actions": legal[kit]}
        (folder / f"{kit}.txt").write_text(json.dumps(start) + '\n{"type":"close"}\n')
    return folder, legal


def test_every_game_has_a_kit_in_each_language() -> None:
    for language, entry in (("cpp", "main.cpp"), ("javascript", "main.js")):
        assert {p.parent.name for p in (KITS / language).glob(f"*/{entry}")} == set(GAMES), language


@pytest.mark.parametrize("language", ["cpp", "javascript"])
def test_each_kit_answers_its_game_with_a_legal_action(
    language: str, base_image: str, messages: tuple[Path, dict[str, list[int]]]
) -> None:
    folder, legal = messages
    output = get_client().containers.run(
        BuilderSettings.from_env().base_image_for(language),
        ["sh", "-c", RUN[language]],
        volumes={
            str(KITS / language): {"bind": "/kits", "mode": "ro"},
            str(HARNESS): {"bind": "/harness", "mode": "ro"},
            str(folder): {"bind": "/messages", "mode": "ro"},
        },
        network_mode="none",
        user="10001:10001",
        remove=True,
    )
    answers = {}
    for line in output.decode().splitlines():
        name, _, reply = line.partition(" ")
        if name in GAMES:
            answers[name] = reply
    assert set(answers) == set(GAMES), output.decode()[-3000:]
    for kit, reply in answers.items():
        message = json.loads(reply)
        assert message["type"] == "action", (kit, reply)
        assert message["action"] in legal[kit], (kit, reply)
