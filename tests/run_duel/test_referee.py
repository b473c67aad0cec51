"""The referee through the real local sandbox: the duel JSON, scoring, error attribution, relaunches."""

from __future__ import annotations

import pytest
from run_duel_helpers import (
    BROKEN,
    FAST_LIMITS,
    RANDOM,
    TrackingSandbox,
    assert_nothing_left,
    player_source,
)

from environments import get_game
from run_duel.api import smoke_test
from run_duel.duel_result import DUEL_FIELDS, MATCH_FIELDS, validate_duel_json
from run_duel.referee import MAX_RELAUNCHES, play_duel
from run_duel.sandbox.base import LaunchSpec, Sandbox, SandboxError

DUEL_EXTRAS = {
    "player_1_log",
    "player_2_log",
    "player_1_relaunches",
    "player_2_relaunches",
    "environment",
    "sandbox",
    "isolation",
    "cpus",
    "phases_s",
    "started_at",
    "duration_s",
}
MATCH_EXTRAS = {"error_kind", "actions", "move_times", "num_moves"}


def duel(sandbox, agent_1, agent_2, matches=4, game="tic-tac-toe", **options):
    spec_1 = LaunchSpec(str(agent_1), env={"MARKER": options.pop("marker", "none")})
    spec_2 = LaunchSpec(str(agent_2), env={"MARKER": spec_1.env["MARKER"]})
    result = play_duel(game, sandbox, spec_1, spec_2, matches=matches, limits=FAST_LIMITS, **options)
    validate_duel_json(result)
    return result


@pytest.fixture(scope="module")
def random_duel():
    sandbox = TrackingSandbox()
    result = play_duel(
        "tic-tac-toe",
        sandbox,
        LaunchSpec(str(RANDOM)),
        LaunchSpec(str(RANDOM)),
        matches=6,
        limits=FAST_LIMITS,
    )
    sandbox.close()
    return result, sandbox


def test_the_duel_json_has_every_rl_arena_field_and_only_documented_extras(random_duel):
    result, _ = random_duel
    validate_duel_json(result)
    assert set(result) == DUEL_FIELDS | DUEL_EXTRAS
    for match in result["matches"]:
        assert set(match) == MATCH_FIELDS | MATCH_EXTRAS


def test_the_duel_says_where_its_time_went(random_duel):
    result, _ = random_duel
    phases = result["phases_s"]
    assert set(phases) == {"start", "play", "close"}
    assert phases["start"] > 0 and phases["play"] > 0  # two agents were started; six matches were played
    # Each phase is rounded to 0.1 ms; together they are the duel's duration, however loaded the machine.
    assert sum(phases.values()) == pytest.approx(result["duration_s"], abs=0.0003)


def test_the_first_player_alternates_starting_with_player_1(random_duel):
    result, _ = random_duel
    assert [m["first_player"] for m in result["matches"]] == ["PLAYER_1", "PLAYER_2"] * 3


def test_counters_and_scores_add_up(random_duel):
    result, _ = random_duel
    assert result["num_matches"] == 6
    assert result["player_1_wins"] + result["player_2_wins"] + result["draws"] == 6
    assert result["player_1_score"] + result["player_2_score"] == 6
    assert result["player_1_errors"] == result["player_2_errors"] == result["other_errors"] == 0
    expected = "DRAW"
    if result["player_1_score"] != result["player_2_score"]:
        expected = "PLAYER_1_WIN" if result["player_1_score"] > result["player_2_score"] else "PLAYER_2_WIN"
    assert result["result"] == expected


def test_each_match_records_legal_actions_states_and_times(random_duel):
    result, _ = random_duel
    game = get_game("tic-tac-toe")
    for match in result["matches"]:
        state = game.initial_state()
        for action, recorded in zip(match["actions"], match["states"], strict=True):
            state = game.apply(state, action)
            assert recorded == state
        assert game.is_over(state)
        assert match["num_moves"] == len(match["actions"]) == len(match["move_times"])
        # seconds to the microsecond, as floats (what the duel JSON's readers and replays show)
        assert all(type(t) is float and 0 <= t == round(t, 6) for t in match["move_times"])
        winner = game.winner(state)
        first = 0 if match["first_player"] == "PLAYER_1" else 1
        expected = (
            "DRAW"
            if winner is None
            else ("PLAYER_1_WIN" if (winner == 0) == (first == 0) else "PLAYER_2_WIN")
        )
        assert match["result"] == expected and match["error_kind"] is None


def test_both_agents_live_through_the_whole_duel_and_are_gone_after(random_duel):
    result, sandbox = random_duel
    assert len(sandbox.launched) == 2
    assert result["player_1_relaunches"] == result["player_2_relaunches"] == 0
    assert_nothing_left(sandbox)


def test_record_states_false_leaves_states_empty(sandbox):
    result = duel(sandbox, RANDOM, RANDOM, matches=2, record_states=False)
    assert all(m["states"] == [] and m["actions"] for m in result["matches"])


def test_progress_is_reported_after_each_match(sandbox):
    calls = []
    duel(sandbox, RANDOM, RANDOM, matches=3, on_progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 3), (2, 3), (3, 3)]


# -- broken players: each is charged in the seat it plays, the other seat never --------------------------

BROKEN_KINDS = {
    "crash_at_import": "CRASH",
    "crash_mid_match": "CRASH",
    "exits_mid_match": "CRASH",
    "floods_stdout": "OUTPUT_LIMIT",
    "illegal_action": "INVALID_ACTION",
    "non_json": "BAD_OUTPUT",
    "sleeps_past_deadline": "TIMEOUT",
    "slow_start": "TIMEOUT",
    "wrong_type": "INVALID_ACTION",
}


@pytest.mark.parametrize("seat", [1, 2])
@pytest.mark.parametrize("name", sorted(BROKEN_KINDS))
def test_a_broken_player_is_charged_with_its_error_kind_in_its_own_seat(name, seat, marker):
    if not (BROKEN / name / "player.py").exists():
        pytest.skip(f"example_players/broken/{name} not written yet")
    sandbox = TrackingSandbox()
    agents = (BROKEN / name, RANDOM) if seat == 1 else (RANDOM, BROKEN / name)
    # Connect Four: nobody can win before the broken players' failing move (at latest their 3rd).
    result = duel(sandbox, *agents, matches=2, marker=marker, game="connect-four")
    guilty, innocent = (f"PLAYER_{seat}", f"PLAYER_{3 - seat}")
    for match in result["matches"]:
        assert match["result"] == f"{guilty}_ERROR", match["error_msg"]
        assert match["error_kind"] == BROKEN_KINDS[name], match["error_msg"]
        assert guilty in match["error_msg"]
        assert match[f"player_{seat}_score"] == 0 and match[f"player_{3 - seat}_score"] == 1
    assert result[f"player_{3 - seat}_errors"] == 0 and result["other_errors"] == 0
    assert result["result"] == f"{innocent}_WIN"
    assert_nothing_left(sandbox, marker)


# -- protocol abuse through throw-away agents ---------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "kind", "hint"),
    [
        ('os.write(4, b\'{"type": "action", "action": 0}{garbage\\n\'); return 0', "BAD_OUTPUT", "not JSON"),
        ("os.write(4, b'\\xff\\xfe\\n'); return 0", "BAD_OUTPUT", "not UTF-8"),
        ("os.write(4, b'[1, 2]\\n'); return 0", "BAD_OUTPUT", "not a JSON object"),
        ('os.write(4, b\'{"type": "ready"}\\n\'); return 0', "BAD_OUTPUT", "instead of an action"),
        ("os.write(4, b'x' * 200000); return 0", "OUTPUT_LIMIT", "longer than"),
        ("return 10**30", "INVALID_ACTION", "not a legal action"),
        ("return float('nan')", "INVALID_ACTION", "not a JSON value"),
        ("return True", "INVALID_ACTION", "not an int"),
        ("return 2.5", "INVALID_ACTION", "not a whole number"),  # 2.0 is played as 2
        ("return None", "INVALID_ACTION", "None"),
        ("raise MemoryError()", "MEMORY_LIMIT", "MemoryError"),
        ("hog = bytearray(4 * 1024**3); return 0", "MEMORY_LIMIT", "MemoryError"),
    ],
    ids=[
        "garbage",
        "non-utf8",
        "json-array",
        "wrong-message",
        "huge-line",
        "huge-int",
        "nan",
        "bool",
        "float",
        "none",
        "memory-error",
        "real-allocation",
    ],
)
def test_protocol_abuse_is_charged_to_the_abuser(sandbox, make_agent, body, kind, hint):
    # fd 4 is the harness's private protocol write end in the local sandbox (dup of fd 1, after fd 3).
    agent = make_agent(player_source(body))
    result = duel(sandbox, agent, RANDOM, matches=2)
    for match in result["matches"]:
        assert match["result"] == "PLAYER_1_ERROR"
        assert match["error_kind"] == kind
        assert hint in match["error_msg"]
    assert result["player_2_errors"] == 0


def test_after_an_in_sync_error_the_same_process_keeps_playing(sandbox):
    result = duel(sandbox, BROKEN / "illegal_action", RANDOM, matches=4)
    assert result["player_1_relaunches"] == 0
    assert len(sandbox.launched) == 2


def test_relaunches_are_capped_and_later_matches_are_charged_with_a_clear_message(sandbox, marker):
    result = duel(sandbox, BROKEN / "exits_mid_match", RANDOM, matches=6, marker=marker)
    assert result["player_1_relaunches"] == MAX_RELAUNCHES
    assert len(sandbox.launched) == 2 + MAX_RELAUNCHES
    assert all(m["result"] == "PLAYER_1_ERROR" and m["error_kind"] == "CRASH" for m in result["matches"])
    assert "exited with code 3" in result["matches"][0]["error_msg"]
    assert "already restarted" in result["matches"][-1]["error_msg"]
    assert result["player_2_relaunches"] == 0 and result["player_2_errors"] == 0
    assert_nothing_left(sandbox, marker)


def test_a_failure_to_start_is_charged_for_every_match_without_relaunching(sandbox, make_agent):
    agent = make_agent("import numpy\nprint('about to fail')\nraise ImportError('no model file')\n")
    result = duel(sandbox, RANDOM, agent, matches=3)
    assert [m["result"] for m in result["matches"]] == ["PLAYER_2_ERROR"] * 3
    assert "no model file" in result["matches"][0]["error_msg"]
    assert "about to fail" in result["matches"][0]["error_msg"]  # the stderr tail is quoted
    assert len(sandbox.launched) == 2


def test_when_both_agents_fail_to_start_nobody_scores(sandbox, make_agent):
    agent = make_agent("raise SystemExit(4)\n")
    result = duel(sandbox, agent, agent, matches=2)
    assert [m["result"] for m in result["matches"]] == ["PLAYER_1_ERROR", "PLAYER_2_ERROR"]
    assert result["player_1_score"] == result["player_2_score"] == 0


# -- our own failures are never charged ---------------------------------------------------------------


class ExplodingTicTacToe:
    """Tic-tac-toe whose rules raise on the third move: a bug in our code, not in the agents'."""

    def __new__(cls):
        base = type(get_game("tic-tac-toe"))

        class Exploding(base):
            slug = "exploding-tic-tac-toe"

            def apply(self, state, action):
                if sum(1 for cell in state["board"] if cell) >= 2:
                    raise RuntimeError("bug in the rules")
                return super().apply(state, action)

        return Exploding()


def test_a_bug_in_our_game_code_is_other_error_and_charged_to_nobody(sandbox, caplog):
    result = play_duel(
        ExplodingTicTacToe(),
        sandbox,
        LaunchSpec(str(RANDOM)),
        LaunchSpec(str(RANDOM)),
        matches=2,
        limits=FAST_LIMITS,
    )
    validate_duel_json(result)
    assert [m["result"] for m in result["matches"]] == ["OTHER_ERROR", "OTHER_ERROR"]
    assert all(m["error_kind"] == "INFRA" and "bug in the rules" in m["error_msg"] for m in result["matches"])
    assert result["player_1_errors"] == result["player_2_errors"] == 0
    assert result["player_1_score"] == result["player_2_score"] == 0
    assert result["result"] == "ERROR" and "our side" in result["error_msg"]
    assert "bug in the rules" in caplog.text


class BrokenSandbox(Sandbox):
    """A sandbox whose infrastructure is down."""

    name = "broken"
    isolation = "none"

    def launch(self, spec):
        raise SandboxError("engine unreachable")


def test_a_sandbox_that_cannot_start_agents_makes_the_duel_an_error():
    result = play_duel("tic-tac-toe", BrokenSandbox(), LaunchSpec("a"), LaunchSpec("b"), matches=2)
    validate_duel_json(result)
    assert result["result"] == "ERROR" and "engine unreachable" in result["error_msg"]
    assert result["other_errors"] == 2 and result["player_1_errors"] == result["player_2_errors"] == 0


# -- smoke test ---------------------------------------------------------------------------------------


def test_smoke_test_passes_for_a_sound_agent(sandbox):
    outcome = smoke_test("tic-tac-toe", sandbox, LaunchSpec(str(RANDOM)), matches=2)
    assert outcome.ok, outcome.reason
    assert outcome.duel["num_matches"] == 2


def test_smoke_test_fails_with_a_readable_reason_for_a_broken_agent(sandbox):
    outcome = smoke_test("tic-tac-toe", sandbox, LaunchSpec(str(BROKEN / "crash_mid_match")), matches=2)
    assert not outcome.ok
    assert "CRASH" in outcome.reason and "crash_mid_match" in outcome.reason


def test_the_inprocess_sandbox_plays_the_same_duel_without_processes():
    from run_duel.sandbox.inprocess import InProcessSandbox

    result = play_duel(
        "tic-tac-toe", InProcessSandbox(), LaunchSpec(str(RANDOM)), LaunchSpec(str(RANDOM)), matches=2
    )
    validate_duel_json(result)
    assert result["player_1_errors"] == result["player_2_errors"] == result["other_errors"] == 0
    assert result["isolation"].startswith("NONE")


def test_the_last_words_of_a_crashing_agent_are_in_the_error_message(sandbox, make_agent):
    agent = make_agent(
        player_source("""
            print("last words before dying", file=sys.stderr, flush=True)
            os._exit(3)
        """)
    )
    result = duel(sandbox, agent, RANDOM, matches=1)
    match = result["matches"][0]
    assert match["error_kind"] == "CRASH"
    assert "exited with code 3" in match["error_msg"] and "last words before dying" in match["error_msg"]
    assert "last words before dying" in result["player_1_log"]
