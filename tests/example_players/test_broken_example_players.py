"""The deliberately broken players misbehave exactly as their README says (the referee tests rely on it).

Players that write to raw descriptors or end the process run in a child process, so they can only
reach the descriptors the test hands them.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _play import EXAMPLES, load_player_module, play_match

from environments import all_slugs, get_info

BROKEN = EXAMPLES / "broken"
NAMES = [
    "crash_at_import",
    "crash_mid_match",
    "sleeps_past_deadline",
    "illegal_action",
    "non_json",
    "floods_stdout",
    "exits_mid_match",
    "wrong_type",
    "slow_start",
]
OBS = np.zeros((3, 3), dtype=np.int8)
VALID = np.arange(9, dtype=np.int64)


def child_command(name: str, calls: str) -> list[str]:
    """A fresh Python that loads ``broken/<name>/player.py`` and runs ``calls`` (``p`` is the Player)."""
    script = textwrap.dedent(
        f"""
        import importlib.util, numpy as np
        spec = importlib.util.spec_from_file_location("broken_player", {str(BROKEN / name / "player.py")!r})
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        p = module.Player(False)
        obs, valid = np.zeros((3, 3), dtype=np.int8), np.arange(9, dtype=np.int64)
        """
    )
    return [sys.executable, "-c", script + calls]


def run_in_child(name: str, calls: str, **kwargs) -> subprocess.CompletedProcess:
    """Run :func:`child_command` to completion."""
    return subprocess.run(child_command(name, calls), timeout=120, check=False, **kwargs)


@pytest.mark.parametrize("name", NAMES)
def test_every_broken_player_has_a_player_file_and_a_readme(name):
    assert (BROKEN / name / "player.py").is_file()
    assert (BROKEN / name / "README.md").read_text().strip()


def test_crash_at_import_raises_while_imported():
    with pytest.raises(RuntimeError, match="crash_at_import"):
        load_player_module(BROKEN / "crash_at_import")


def test_crash_mid_match_plays_legally_then_raises(random_module):
    player = load_player_module(BROKEN / "crash_mid_match").Player(False)
    with pytest.raises(RuntimeError, match="move 3"):
        play_match("connect-four", player, random_module.Player(False))
    assert player.moves == 3


def test_illegal_action_answers_an_int_outside_valid_actions():
    player = load_player_module(BROKEN / "illegal_action").Player(False)
    action = player.start(OBS, VALID)
    assert type(action) is int and action not in VALID


def test_wrong_type_answers_a_string():
    player = load_player_module(BROKEN / "wrong_type").Player(False)
    assert player.start(OBS, VALID) == "left"
    assert player.step(OBS, VALID, 0.0) == "left"


def test_sleeps_past_deadline_sleeps_longer_than_any_move_limit():
    module = load_player_module(BROKEN / "sleeps_past_deadline")
    longest_limit = max(get_info(slug).move_time_limit for slug in all_slugs())
    assert longest_limit < module.SLEEP_SECONDS
    assert module.Player(False).start(OBS, VALID) in VALID  # the first move is instant and legal


def test_slow_start_sleeps_longer_than_any_init_limit():
    source = (BROKEN / "slow_start" / "player.py").read_text()
    assert "time.sleep(SLEEP_SECONDS)" in source  # building it would take a minute
    namespace: dict = {}
    exec(source.split("class Player")[0], namespace)
    longest_limit = max(get_info(slug).init_time_limit for slug in all_slugs())
    assert namespace["SLEEP_SECONDS"] > longest_limit


def test_exits_mid_match_ends_the_process_with_status_3():
    result = run_in_child(
        "exits_mid_match", "print(p.start(obs, valid), flush=True)\np.step(obs, valid, 0.0)\nprint('alive')"
    )
    assert result.returncode == 3


def test_non_json_writes_garbage_to_stdout_and_to_every_extra_descriptor():
    read_fd, write_fd = os.pipe()
    try:
        result = run_in_child(
            "non_json",
            f"import os\nos.dup2({write_fd}, 7)\nprint(p.start(obs, valid))",
            pass_fds=(write_fd,),
            capture_output=True,
        )
        os.close(write_fd)
        write_fd = -1
        with os.fdopen(read_fd, "rb") as extra:
            extra_bytes = extra.read()
    finally:
        if write_fd >= 0:
            os.close(write_fd)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"not json\n0\n"
    assert extra_bytes.count(b"not json\n") == 2  # the inherited fd and its duplicate 7


def test_floods_stdout_writes_hundreds_of_megabytes_without_a_newline():
    proc = subprocess.Popen(child_command("floods_stdout", "p.start(obs, valid)"), stdout=subprocess.PIPE)
    total, newlines = 0, 0
    while chunk := proc.stdout.read(1 << 20):
        total += len(chunk)
        newlines += chunk.count(b"\n")
    assert proc.wait(timeout=60) == 0
    assert total >= 200 * (1 << 20)
    assert newlines == 0
