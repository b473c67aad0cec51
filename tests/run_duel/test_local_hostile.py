"""The hostile example agents against the local sandbox with bubblewrap: contained, charged correctly."""

from __future__ import annotations

import dataclasses

import pytest
from run_duel_helpers import EXAMPLES, HAS_BWRAP, RANDOM, TrackingSandbox, assert_nothing_left

from run_duel.duel_result import validate_duel_json
from run_duel.referee import play_duel
from run_duel.sandbox.base import LaunchSpec, Limits

HOSTILE = EXAMPLES / "hostile"
LIMITS = Limits(move_timeout=1.0, init_timeout=3.0, memory_mb=256, tmpfs_mb=32)

#: Error kind charged to the hostile agent; None = it must play on unaffected (contained).
EXPECTED = {
    "infinite_loop": "TIMEOUT",
    "sleep_forever": "TIMEOUT",
    "slow_drip": "TIMEOUT",
    "hang_at_import": "TIMEOUT",
    "memory_bomb": "MEMORY_LIMIT",
    "malformed_json": "BAD_OUTPUT",
    "malformed_nan": "BAD_OUTPUT",
    "malformed_utf8": "BAD_OUTPUT",
    "malformed_huge_int": "INVALID_ACTION",
    "crash_exception": "CRASH",
    "crash_exit": "CRASH",
    "crash_segfault": "CRASH",
    "close_socket": "CRASH",
    "fork_bomb": None,
    "thread_bomb": None,
    "fill_tmp": None,
    "huge_sparse_file": None,
    "write_outside_tmp": None,
    "stdout_flood": None,
    "stderr_flood": None,
    "close_stdio": None,
    "network": None,
    "signal_others": None,
    "privilege_escalation": None,
    "read_secrets": None,
    "fd_exhaustion": None,
}

pytestmark = pytest.mark.skipif(not HAS_BWRAP, reason="hostile agents only ever run inside bubblewrap")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_hostile_agent_is_contained_and_charged_only_for_what_it_did(name, marker):
    if not (HOSTILE / name / "player.py").exists():
        pytest.skip(f"example_players/hostile/{name} not present")
    sandbox = TrackingSandbox(use_bwrap=True)
    spec = LaunchSpec(str(HOSTILE / name), env={"MARKER": marker})
    # Touching hundreds of MB takes a while on a busy machine: the memory bomb must hit the memory
    # limit, not the move deadline.
    limits = dataclasses.replace(LIMITS, move_timeout=10.0) if name == "memory_bomb" else LIMITS
    result = play_duel("tic-tac-toe", sandbox, spec, LaunchSpec(str(RANDOM)), matches=2, limits=limits)
    validate_duel_json(result)
    kinds = [m["error_kind"] for m in result["matches"]]
    messages = [m["error_msg"] for m in result["matches"]]
    if EXPECTED[name] is None:
        assert result["player_1_errors"] == 0, messages
    else:
        assert kinds == [EXPECTED[name]] * 2, messages
        assert result["player_1_errors"] == 2
    assert result["player_2_errors"] == result["other_errors"] == 0, messages
    assert_nothing_left(sandbox, marker)
