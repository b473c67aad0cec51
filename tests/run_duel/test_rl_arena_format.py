"""The rl-arena format's adapter against the original rl-arena's own rules.

The reference is the rules code the original project's minimax example bundles (``connect_four.py``,
``tic_tac_toe.py``, ``quarto.py`` in ``example_players/rl_arena/minimax``: the project's
``environments/*/environment.py`` plus ``from_state``), used unchanged. Random games are played with OUR
rules, the adapter is fed exactly what our referee sends the seat (JSON round trip included), and every
argument the wrapped Player receives must equal what rl-arena's match loop (``run_duel/run_match.py``)
would have given it in the same game: state array (values and dtype), valid actions (values, order,
dtype) and ``prev_reward``.
"""

from __future__ import annotations

import importlib.util
import json
import random
import types
from pathlib import Path

import numpy as np
import pytest

from environments import get_game
from run_duel.harness.arena_harness import RL_ARENA_GAMES, RlArenaAdapter, rl_arena_player

RL_ARENA = Path(__file__).resolve().parents[2] / "example_players" / "rl_arena"
RULES = {"connect-four": "connect_four", "tic-tac-toe": "tic_tac_toe", "quarto": "quarto"}


def their_environment(slug: str) -> type:
    """rl-arena's ``Environment`` class for ``slug`` (from the minimax example's bundled copy)."""
    name = RULES[slug]
    spec = importlib.util.spec_from_file_location(f"rl_arena_{name}", RL_ARENA / "minimax" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Environment


class Recorder:
    """An rl-arena Player that records its calls and plays the action the test tells it to."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.next_action = None

    def start(self, state, valid_actions):
        self.calls.append(("start", state.copy(), np.array(valid_actions), None))
        return self.next_action

    def step(self, state, valid_actions, prev_reward):
        self.calls.append(("step", state.copy(), np.array(valid_actions), prev_reward))
        return self.next_action

    def end(self, state, prev_reward):
        self.calls.append(("end", state.copy(), None, prev_reward))


def wire(value):
    """What the harness hands the Player after the referee's JSON: ``numpy.asarray`` of the lists."""
    return json.loads(json.dumps(value.tolist() if isinstance(value, np.ndarray) else value))


def same_array(ours, theirs) -> bool:
    theirs = np.asarray(wire(theirs))  # rl-arena's Player got np.asarray of the JSON too
    return ours.dtype == theirs.dtype and ours.shape == theirs.shape and np.array_equal(ours, theirs)


def quarto_action(ours: int, mask: int) -> int:
    cell, piece = divmod(ours, 17)
    return 16 * cell + (piece ^ mask)


def play_one(slug: str, adapter_seat: int, rng: random.Random) -> dict:
    """One random game with our rules; the adapter's Player is checked against rl-arena's environment
    at every call. Returns what happened (for the coverage assertions)."""
    game = get_game(slug)
    recorder = Recorder()
    adapter = RlArenaAdapter(recorder, RL_ARENA_GAMES[slug]())
    env = their_environment(slug)()
    their_state, their_valid = env.reset()
    last_reward = {0: 0, 1: 0}  # rl-arena's reward_a / reward_b: each seat's last step reward
    mask = None
    started = False
    state = game.initial_state(rng.randrange(1 << 30))
    info = {"opponent_won_early": False}
    while not game.is_over(state):
        seat = game.to_move(state)
        legal = game.legal_actions(state)
        obs = wire(game.observation(state, seat))
        if seat == adapter_seat:
            before = len(recorder.calls)
            # the agent will play one of rl-arena's valid actions (if it is asked at all)
            recorder.next_action = rng.choice(list(their_valid)) if len(their_valid) else None
            # the harness's serve(): numpy.asarray(state), numpy.asarray(valid_actions, dtype=int64)
            args = (np.asarray(obs), np.asarray(wire(legal), dtype=np.int64))
            if slug == "quarto" and mask is None:
                mask = 0  # this seat opens: it hands over piece 15
            if not started:
                reply = adapter.start(*args)
                started = True
            else:
                reply = adapter.step(*args, 0.0)
            consulted = len(recorder.calls) > before
            if consulted:
                kind, got_state, got_valid, got_reward = recorder.calls[-1]
                assert same_array(got_state, their_state), (slug, got_state, their_state)
                assert got_valid.dtype == np.int64 and np.array_equal(
                    got_valid, np.asarray(wire(their_valid))
                )
                if kind == "step":
                    assert got_reward == last_reward[seat] - last_reward[1 - seat] == 0
                    assert type(got_reward) is int
                assert kind == ("step" if sum(c[0] == "start" for c in recorder.calls[:-1]) else "start")
            action = reply
        else:
            action = rng.choice(legal)
            if slug == "quarto" and mask is None:
                mask = 15 ^ (action % 17)  # the opponent opened with this piece
        assert action in legal, (slug, action, legal)
        # mirror the move in rl-arena's environment (its opening and its last placement have no move)
        if slug == "quarto":
            cell, _ = divmod(action, 17)
            skip = cell == 16 or action % 17 == 16
        else:
            skip = False
        if not skip:
            their_action = quarto_action(action, mask) if slug == "quarto" else action
            assert their_action in list(their_valid)
            their_state, reward, done, their_valid = env.step(their_action)
            last_reward[seat] = reward
            last_mover = seat
        state = game.apply(state, action)
    # the end, as rl-arena's match loop computed it: the last mover gets its reward, the other its negation
    winner = game.winner(state)
    ours_reward = 0.0 if winner is None else (1.0 if winner == adapter_seat else -1.0)
    adapter.end(np.asarray(wire(game.observation(state, adapter_seat))), ours_reward)
    kind, got_state, _, got_reward = recorder.calls[-1]
    assert kind == "end"
    assert done
    expected = last_reward[last_mover] if last_mover == adapter_seat else -last_reward[last_mover]
    assert got_reward == expected and type(got_reward) is int, (got_reward, expected)
    if slug == "quarto":
        placed = sum(v != -1 for v in state["board"])
        if winner is not None and winner != adapter_seat and placed < 16:
            # the piece the opponent named with its winning placement is not sent to this seat
            info["opponent_won_early"] = True
            assert same_array(got_state[:16], their_state[:16])
            assert got_state[16] not in got_state[:16]
        else:
            assert same_array(got_state, their_state), (got_state, their_state)
    else:
        assert same_array(got_state, their_state), (got_state, their_state)
    info["winner"] = winner
    info["mask"] = mask
    return info


@pytest.mark.parametrize("slug", ["tic-tac-toe", "connect-four", "quarto"])
def test_the_player_gets_exactly_rl_arenas_arguments(slug):
    rng = random.Random(f"rl-arena {slug}")
    outcomes = [play_one(slug, seat, rng) for seat in (0, 1) for _ in range(60)]
    winners = {o["winner"] for o in outcomes}
    assert winners >= {0, 1}, "both seats won some games"
    if slug == "quarto":
        assert len({o["mask"] for o in outcomes}) > 3, "openings with pieces other than 15 were relabelled"
        assert any(o["opponent_won_early"] for o in outcomes)
    if slug != "connect-four":
        assert None in winners, "draws were played"


def test_quarto_opening_and_last_piece_are_answered_for_the_agent():
    """Seat 0 in our Quarto chooses the first piece, which rl-arena fixed to 15: the adapter hands over
    piece 15 without asking the agent; the single forced last placement is answered too."""
    recorder = Recorder()
    adapter = RlArenaAdapter(recorder, RL_ARENA_GAMES["quarto"]())
    state = get_game("quarto").initial_state()
    obs = np.asarray(get_game("quarto").observation(state, 0))
    legal = np.asarray(get_game("quarto").legal_actions(state), dtype=np.int64)
    assert adapter.start(obs, legal) == 17 * 16 + 15
    assert recorder.calls == []
    board = np.arange(17, dtype=np.int64)
    board[5] = -1
    board[16] = 5
    assert adapter.step(board, np.asarray([17 * 5 + 16], dtype=np.int64), 0.0) == 17 * 5 + 16
    assert recorder.calls == []


def test_an_action_outside_its_valid_actions_is_refused(capsys):
    recorder = Recorder()
    adapter = RlArenaAdapter(recorder, RL_ARENA_GAMES["quarto"]())
    game = get_game("quarto")
    state = game.apply(game.initial_state(), 17 * 16 + 3)  # the opponent opened with piece 3
    obs = np.asarray(game.observation(state, 1))
    legal = game.legal_actions(state)
    recorder.next_action = 16 * 0 + 15  # piece 15 is not its to give: it is placing it (3 relabelled)
    reply = adapter.start(obs, np.asarray(legal, dtype=np.int64))
    assert reply not in legal
    assert "not one of its valid_actions" in capsys.readouterr().err
    recorder.next_action = np.float64(16 * 0 + 14)  # returned as a float, read back with int()
    reply = adapter.step(obs, np.asarray(legal, dtype=np.int64), 0.0)
    assert reply == 17 * 0 + (14 ^ 3 ^ 15) and reply in legal


def test_rl_arena_format_needs_one_of_its_games_and_a_player_class():
    module = types.ModuleType("player")
    with pytest.raises(ValueError, match="tic-tac-toe, connect-four, quarto"):
        rl_arena_player(module, "player", "leduc-holdem")
    with pytest.raises(AttributeError, match="no Player class"):
        rl_arena_player(module, "player", "quarto")


# -- detection (run_duel.agent_formats) ------------------------------------------------------------------


def test_the_harness_and_the_platform_agree_on_rl_arenas_games():
    from run_duel import agent_formats

    assert set(RL_ARENA_GAMES) == set(agent_formats.RL_ARENA_GAMES)


def test_an_upload_is_rl_arena_when_environment_yml_sits_next_to_player_py(tmp_path):
    import zipfile

    from run_duel.agent_formats import detect, files_problem, resolve, root_files

    folder = RL_ARENA / "minimax"
    assert detect(root_files(folder), "connect-four") == "rl-arena"
    assert detect(root_files(folder), "leduc-holdem") == "native"  # not one of rl-arena's games
    assert detect(
        root_files(Path(__file__).resolve().parents[2] / "example_players" / "random"), "quarto"
    ) == ("native")
    nested = tmp_path / "nested.zip"
    with zipfile.ZipFile(nested, "w") as archive:
        archive.writestr("bot/player.py", "class Player: ...\n")
        archive.writestr("bot/environment.yml", "name: player\n")
    assert detect(root_files(nested), "tic-tac-toe") == "rl-arena"
    assert detect(root_files(RL_ARENA / "zips" / "missing.zip"), "quarto") == "native"  # no player.py
    assert root_files(tmp_path / "no-such.zip") == []
    assert resolve("auto", "quarto", ["player.py", "environment.yml"]) == ("rl-arena", True)
    assert resolve("native", "quarto", ["player.py", "environment.yml"]) == ("native", False)
    with pytest.raises(ValueError, match="unknown agent format"):
        resolve("conda", "quarto", [])
    with pytest.raises(ValueError, match="not goofspiel"):
        resolve("rl-arena", "goofspiel", [])
    assert "no player.py" in files_problem("rl-arena", ["main.py"])
    assert "no main.py" in files_problem("kaggle", ["main.cpp"])
    assert files_problem("kaggle", ["submission.py"]) == files_problem("rl-arena", ["player.py"]) == ""
