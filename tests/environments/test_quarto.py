"""Quarto rules: the opening and closing actions, wins for every attribute value on every line, draws."""

from __future__ import annotations

import numpy as np
import pytest

from environments import IllegalActionError, InvalidStateError, get_game
from environments.quarto.rules import LINES, cell_name, piece_name

GAME = get_game("quarto")
TALL, DARK, SQUARE, HOLLOW = 1, 2, 4, 8

# A complete random game that placed all 16 pieces without a winning line.
DRAWN_GAME = [287, 170, 150, 1, 42, 224, 264, 194, 210, 104, 79, 242, 30, 90, 63, 129, 169]


def act(cell: int, piece: int) -> int:
    return 17 * cell + piece


def play(actions: list[int]) -> dict:
    """The state after playing ``actions`` from the start."""
    state = GAME.initial_state()
    for action in actions:
        state = GAME.apply(state, action)
    return state


def position(placed: dict[int, int], in_hand: int) -> dict:
    """A valid running state with ``placed`` ({cell: piece}) on the board and ``in_hand`` to place."""
    board = [-1] * 16
    for cell, piece in placed.items():
        board[cell] = piece
    n = len(placed)
    last = act(next(iter(placed)), in_hand) if placed else 272 + in_hand
    state = {
        "board": board,
        "in_hand": in_hand,
        "available": sorted(set(range(16)) - set(placed.values()) - {in_hand}),
        "to_move": (n + 1) % 2,
        "winner": None,
        "done": False,
        "last_action": last,
    }
    GAME.validate_state(state)
    return state


def pieces_sharing_only(bit: int, value: int) -> list[int]:
    """Four pieces whose attribute ``bit`` is ``value`` and that share no other attribute value."""
    others = [b for b in range(4) if b != bit]
    # Each of the other three bits is set in exactly two of these patterns: nothing else is shared.
    patterns = [(0, 0, 0), (1, 1, 0), (1, 0, 1), (0, 1, 1)]
    pieces = []
    for pattern in patterns:
        piece = value << bit
        for other_bit, other_value in zip(others, pattern, strict=True):
            piece |= other_value << other_bit
        pieces.append(piece)
    return pieces


ATTRIBUTE_VALUES = [
    (0, 1, "all tall"),
    (0, 0, "all short"),
    (1, 1, "all dark"),
    (1, 0, "all light"),
    (2, 1, "all square"),
    (2, 0, "all round"),
    (3, 1, "all hollow"),
    (3, 0, "all solid"),
]
LINE_NAMES = [
    *(f"row {r}" for r in range(4)),
    *(f"column {c}" for c in range(4)),
    "diagonal",
    "anti-diagonal",
]


@pytest.mark.parametrize("line", LINES, ids=LINE_NAMES)
@pytest.mark.parametrize(("bit", "value", "name"), ATTRIBUTE_VALUES, ids=[a[2] for a in ATTRIBUTE_VALUES])
def test_four_pieces_sharing_one_attribute_value_on_a_line_win(bit, value, name, line):
    pieces = pieces_sharing_only(bit, value)
    state = position(dict(zip(line[:3], pieces[:3], strict=True)), in_hand=pieces[3])
    mover = state["to_move"]
    give = state["available"][0]
    after = GAME.apply(state, act(line[3], give))
    assert GAME.is_over(after), name
    assert GAME.winner(after) == mover
    assert after["in_hand"] == -1
    assert GAME.legal_actions(after) == []
    GAME.validate_state(after)


def test_the_all_clear_piece_wins_with_pieces_sharing_a_clear_bit():
    # Piece 0 is short, light, round and solid: a line of round pieces wins even though 0 has no bit set.
    state = position({0: 0, 1: TALL, 2: TALL | DARK | HOLLOW}, in_hand=DARK | HOLLOW)
    assert GAME.winner(GAME.apply(state, act(3, 5))) == state["to_move"]


def test_a_full_line_sharing_no_attribute_does_not_win():
    state = position({0: 0, 1: 15, 2: TALL | DARK}, in_hand=SQUARE | HOLLOW)
    after = GAME.apply(state, act(3, 5))
    assert not GAME.is_over(after)
    assert after["in_hand"] == 5


def test_the_opening_turn_only_chooses_a_piece():
    state = GAME.initial_state()
    assert GAME.legal_actions(state) == [272 + p for p in range(16)]
    after = GAME.apply(state, 272 + 9)
    assert after["board"] == [-1] * 16
    assert after["in_hand"] == 9
    assert after["available"] == [p for p in range(16) if p != 9]
    assert after["to_move"] == 1


def test_placing_on_the_opening_turn_is_illegal():
    with pytest.raises(IllegalActionError, match="opening turn only chooses the piece"):
        GAME.apply(GAME.initial_state(), act(0, 3))


def test_giving_nothing_on_the_opening_turn_is_illegal():
    with pytest.raises(IllegalActionError, match="piece 16 is not available"):
        GAME.apply(GAME.initial_state(), act(16, 16))


def test_a_turn_places_the_piece_in_hand_and_gives_another():
    state = GAME.apply(play([272 + 9]), act(5, 2))
    assert state["board"][5] == 9
    assert state["in_hand"] == 2
    assert 2 not in state["available"] and 9 not in state["available"]
    assert state["to_move"] == 0


def test_skipping_the_placement_after_the_opening_is_illegal():
    with pytest.raises(IllegalActionError, match=r"cell 16 .* only for the opening"):
        GAME.apply(play([272 + 9]), act(16, 2))


def test_placing_on_an_occupied_cell_is_illegal():
    state = play([272 + 9, act(5, 2)])
    with pytest.raises(IllegalActionError, match=r"cell 5 \(b2\) is occupied by piece 9"):
        GAME.apply(state, act(5, 3))


@pytest.mark.parametrize("piece", [9, 2], ids=["on the board", "in hand"])
def test_giving_a_piece_that_is_not_available_is_illegal(piece):
    state = play([272 + 9, act(5, 2)])
    with pytest.raises(IllegalActionError, match=f"piece {piece} is not available"):
        GAME.apply(state, act(0, piece))


def test_giving_nothing_while_pieces_remain_is_illegal():
    with pytest.raises(IllegalActionError, match=r"piece 16 .* only allowed when no piece is left"):
        GAME.apply(play([272 + 9]), act(0, 16))


def test_the_last_placement_gives_nothing():
    before = play(DRAWN_GAME[:-1])
    assert before["available"] == []
    empty = before["board"].index(-1)
    assert GAME.legal_actions(before) == [act(empty, 16)]
    with pytest.raises(IllegalActionError, match="no piece is left to give"):
        GAME.apply(before, act(empty, 0))


def test_all_sixteen_pieces_placed_without_a_winning_line_is_a_draw():
    state = play(DRAWN_GAME)
    assert GAME.is_over(state)
    assert GAME.winner(state) is None
    assert sorted(state["board"]) == list(range(16))
    assert state["in_hand"] == -1
    assert GAME.rewards(state) == (0.0, 0.0)


def test_a_winning_placement_ignores_the_piece_named_and_keeps_it_available():
    state = position({0: TALL, 1: TALL | DARK, 2: TALL | SQUARE}, in_hand=TALL | HOLLOW)
    after = GAME.apply(state, act(3, 0))
    assert GAME.is_over(after)
    assert after["in_hand"] == -1
    assert 0 in after["available"]


def test_legal_actions_pair_every_empty_cell_with_every_available_piece():
    state = play([272 + 9, act(5, 2)])
    legal = GAME.legal_actions(state)
    assert len(legal) == 15 * 14
    assert legal == sorted(legal)
    assert act(5, 3) not in legal and act(0, 2) not in legal and act(0, 3) in legal


def test_observation_is_the_board_followed_by_the_piece_in_hand():
    state = play([272 + 9, act(5, 2)])
    obs = GAME.observation(state, 0)
    assert obs.shape == (17,) and obs.dtype == np.int64
    expected = [-1] * 16 + [2]
    expected[5] = 9
    assert obs.tolist() == expected
    np.testing.assert_array_equal(GAME.observation(state, 1), obs)


def test_observation_on_the_opening_turn_has_no_piece_in_hand():
    assert GAME.observation(GAME.initial_state(), 0).tolist() == [-1] * 17


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"available": list(range(16))}, "available must be the sorted unused pieces"),
        ({"in_hand": 9}, "both in hand and on the board"),
        ({"to_move": 1}, "to_move must be 0"),
        ({"board": [9] * 16}, "a piece is on the board twice"),
        ({"done": True}, "in_hand must be -1 once the game is over"),
    ],
)
def test_validate_state_rejects_inconsistent_states(change, message):
    state = {**play([272 + 9, act(5, 2)]), **change}
    with pytest.raises(InvalidStateError, match=message):
        GAME.validate_state(state)


def test_names_of_cells_and_pieces():
    assert cell_name(0) == "a1" and cell_name(9) == "b3" and cell_name(15) == "d4"
    assert piece_name(0) == "piece 0 (short, light, round, solid)"
    assert piece_name(7) == "piece 7 (tall, dark, square, solid)"
    assert piece_name(15) == "piece 15 (tall, dark, square, hollow)"


def test_describe_action_spells_out_placement_and_gift():
    assert GAME.describe_action(GAME.initial_state(), 272 + 8) == "give piece 8 (short, light, round, hollow)"
    state = play([272 + 8])
    assert GAME.describe_action(state, act(9, 7)) == "place on b3, give piece 7 (tall, dark, square, solid)"
    assert GAME.describe_action(state, act(15, 16)) == "place on d4, nothing left to give"
