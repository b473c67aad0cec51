"""C++ and JavaScript agents: built from their entry file (main.cpp compiled at build time without
network, main.js run by our Node.js harness), played in the Docker sandbox against the Python players,
and held to the protocol by the referee when they misbehave (the hostile battery's relevant cases)."""

from __future__ import annotations

import uuid
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from dockertest_support import RANDOM_PLAYER, REPO, containers_with_label, zip_folder

from builder import BuildResult, build_submission
from run_duel.api import LaunchSpec, play_duel, validate_duel_json
from run_duel.sandbox.base import Limits
from run_duel.sandbox.docker_client import get_client

pytestmark = pytest.mark.docker

EXAMPLES = REPO / "example_players"
FOLDERS = {
    "random_cpp": EXAMPLES / "random_cpp",
    "random_js": EXAMPLES / "random_js",
    "hostile_cpp": EXAMPLES / "hostile_cpp",
    "hostile_js": EXAMPLES / "hostile_js",
    "random_py": RANDOM_PLAYER,
}
LIMITS = Limits(memory_mb=256, pids=64, log_bytes=64 * 1024, init_timeout=10.0, move_timeout=1.0)
#: ARENA_HOSTILE mode -> the error kind charged to the hostile seat (None: it plays on unaffected).
HOSTILE = {
    "crash": "CRASH",
    "throw": "CRASH",
    "timeout": "TIMEOUT",
    "flood": "OUTPUT_LIMIT",
    "malformed": "BAD_OUTPUT",
    "stdout": None,
}


@pytest.fixture(scope="module")
def images(base_image: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, BuildResult]:
    """Every agent of this module, built once (a few at a time)."""
    work = tmp_path_factory.mktemp("languages")

    def build(name: str) -> BuildResult:
        archive = zip_folder(FOLDERS[name], work / f"{name}.zip")
        result = build_submission(archive, backend="docker", work_dir=work, registry=None)
        assert result.ok, f"building {name} failed: {result.error}\n{result.log[-3000:]}"
        return result

    with ThreadPoolExecutor(max_workers=3) as pool:
        return dict(zip(FOLDERS, pool.map(build, FOLDERS), strict=True))


def _zip(tmp_path: Path, files: dict[str, str]) -> Path:
    path = tmp_path / f"{uuid.uuid4().hex}.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def test_the_entry_file_decides_the_language_and_the_image(images: dict[str, BuildResult]) -> None:
    assert {name: result.language for name, result in images.items()} == {
        "random_cpp": "cpp",
        "random_js": "javascript",
        "hostile_cpp": "cpp",
        "hostile_js": "javascript",
        "random_py": "python",
    }
    cpp = get_client().images.get(images["random_cpp"].agent_ref).attrs["Config"]
    js = get_client().images.get(images["random_js"].agent_ref).attrs["Config"]
    # The program starts once the referee's socket exists (the data folder filled): our launcher.
    assert (cpp["User"], cpp["Entrypoint"]) == (
        "10001:10001",
        ["/bin/sh", "/opt/arena/launch_when_ready.sh", "/opt/agent-bin/agent"],
    )
    assert js["User"] == "10001:10001"
    assert js["Entrypoint"][:2] == ["node", "/opt/arena/arena_harness.js"]
    listing = get_client().containers.run(
        images["random_cpp"].agent_ref,
        entrypoint=["stat", "-c", "%u %a %n", "/opt/agent-bin/agent", "/agent/main.cpp"],
        network_mode="none",
        remove=True,
    )
    assert listing.decode().split("\n")[:2] == ["0 555 /opt/agent-bin/agent", "0 444 /agent/main.cpp"]


def test_cpp_and_js_random_players_play_the_python_players(
    images: dict[str, BuildResult], docker_sandbox, duel_label: str
) -> None:
    pairs = [
        ("connect-four", "random_cpp", "random_py"),
        ("quarto", "random_py", "random_js"),
        ("tic-tac-toe", "random_js", "random_cpp"),
    ]
    for game, first, second in pairs:
        duel = play_duel(
            game,
            docker_sandbox,
            LaunchSpec(agent=images[first].agent_ref, labels={"duel": duel_label, "seat": "1"}),
            LaunchSpec(agent=images[second].agent_ref, labels={"duel": duel_label, "seat": "2"}),
            matches=2,
            limits=LIMITS,
        )
        validate_duel_json(duel)
        assert duel["player_1_errors"] == duel["player_2_errors"] == duel["other_errors"] == 0, (
            game,
            duel["error_msg"],
        )
        assert len(duel["matches"]) == 2
    assert containers_with_label("duel", duel_label) == []


@pytest.mark.parametrize("mode", sorted(HOSTILE))
@pytest.mark.parametrize("language", ["cpp", "js"])
def test_a_misbehaving_agent_is_charged_by_the_referee(
    language: str, mode: str, images: dict[str, BuildResult], docker_sandbox, duel_label: str
) -> None:
    duel = play_duel(
        "tic-tac-toe",
        docker_sandbox,
        LaunchSpec(
            agent=images[f"hostile_{language}"].agent_ref,
            labels={"duel": duel_label, "seat": "1"},
            env={"ARENA_HOSTILE": mode},
        ),
        LaunchSpec(agent=images["random_py"].agent_ref, labels={"duel": duel_label, "seat": "2"}),
        matches=1,
        limits=LIMITS,
    )
    (match,) = duel["matches"]
    assert match["result"] not in ("PLAYER_2_ERROR", "OTHER_ERROR"), match["error_msg"]
    if HOSTILE[mode] is None:
        assert match["result"] != "PLAYER_1_ERROR", match["error_msg"]
        assert "ooooo" in duel["player_1_log"]  # the prints reached the owner's log, never the protocol
        assert len(duel["player_1_log"]) <= 20 * 1024
    else:
        assert (match["result"], match["error_kind"]) == ("PLAYER_1_ERROR", HOSTILE[mode]), match["error_msg"]
    if mode == "throw":
        assert "hostile: thrown on purpose" in match["error_msg"]
    assert containers_with_label("duel", duel_label) == []


def test_a_cpp_compile_error_reaches_its_author(base_image: str, tmp_path: Path) -> None:
    source = '#include "arena.hpp"\nint main(int argc, char** argv) {\n  return undeclared_name;\n}\n'
    result = build_submission(
        _zip(tmp_path, {"main.cpp": source}), backend="docker", work_dir=tmp_path, registry=None
    )
    assert (result.ok, result.error_kind, result.language) == (False, "BUILD_FAILED", "cpp")
    assert "main.cpp:3:" in result.error and "undeclared_name" in result.error, result.error
    assert "/agent/" not in result.error


def test_a_js_syntax_error_reaches_its_author(base_image: str, tmp_path: Path) -> None:
    source = "class Player {\n  start(state, valid) { return valid[0];\n}\nmodule.exports = Player;\n"
    result = build_submission(
        _zip(tmp_path, {"main.js": source}), backend="docker", work_dir=tmp_path, registry=None
    )
    assert (result.ok, result.error_kind, result.language) == (False, "BUILD_FAILED", "javascript")
    assert result.error.startswith("main.js does not parse:"), result.error
    assert "SyntaxError" in result.error
