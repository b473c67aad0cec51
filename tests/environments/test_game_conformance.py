"""The contract of ``environments.base.Game``, checked on every registered game.

A new game folder is picked up by ``all_slugs()`` and must pass all of this without any edit here.
"""

from __future__ import annotations

import copy
import functools
import itertools
import json
import random
import zlib

import numpy as np
import pytest

from environments import (
    IllegalActionError,
    InvalidStateError,
    State,
    all_slugs,
    get_game,
    get_info,
    static_dir,
)

SLUGS = all_slugs()
PLAYOUTS_PER_GAME = 600
#: Long games (Leduc's ten hands) stop at this many states instead (the board games never reach it).
STATES_PER_GAME = 10_000
#: No game of the platform lasts longer; a playout reaching it means the game never ends.
MAX_MOVES = 2_000
#: Budget of ``apply`` calls per game when trying every action id on sampled states.
ACTION_TRIES_PER_GAME = 20_000
#: Playouts whose every step is checked in the more expensive tests.
DETAILED_PLAYOUTS = 20


@functools.cache
def playouts(slug: str) -> tuple[tuple[tuple[State, int | None], ...], ...]:
    """Seeded random playouts of ``slug``: per playout, the (state, action played from it) pairs.

    The last pair of a finished playout holds the final state and ``None``.
    """
    game = get_game(slug)
    rng = random.Random(zlib.crc32(slug.encode()))
    result = []
    states = 0
    for _ in range(PLAYOUTS_PER_GAME):
        if states >= STATES_PER_GAME:
            break
        state = game.initial_state(rng.randrange(2**31))
        steps = []
        while not game.is_over(state) and len(steps) < MAX_MOVES:
            action = rng.choice(game.legal_actions(state))
            steps.append((state, action))
            state = game.apply(state, action)
        steps.append((state, None))
        states += len(steps)
        result.append(tuple(steps))
    return tuple(result)


def all_states(slug: str) -> list[State]:
    return [state for playout in playouts(slug) for state, _ in playout]


def detailed_steps(slug: str) -> list[tuple[State, int]]:
    """(state, action) pairs of the first playouts, excluding final states."""
    return [(s, a) for playout in playouts(slug)[:DETAILED_PLAYOUTS] for s, a in playout if a is not None]


def sampled_states(slug: str) -> list[State]:
    """Evenly spread states (always including the start and a final state) for exhaustive action checks."""
    game = get_game(slug)
    pool = [state for playout in playouts(slug)[:DETAILED_PLAYOUTS] for state, _ in playout]
    count = max(3, ACTION_TRIES_PER_GAME // game.num_actions)
    if count >= len(pool):
        return pool
    step = len(pool) / count
    sample = [pool[int(i * step)] for i in range(count)]
    return [*sample, pool[-1]]


def scribble(value: object) -> None:
    """Overwrite, in place, every scalar inside nested dicts/lists and append junk to each container."""
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)):
                scribble(item)
            else:
                value[key] = "scribbled"
        value["scribbled"] = True
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, (dict, list)):
                scribble(item)
            else:
                value[i] = "scribbled"
        value.append("scribbled")


@pytest.fixture(params=SLUGS)
def slug(request: pytest.FixtureRequest) -> str:
    return request.param


def test_the_registry_finds_the_three_board_games():
    assert {"tic-tac-toe", "connect-four", "quarto"} <= set(SLUGS)


def test_info_yml_describes_the_game(slug):
    info = get_info(slug)
    game = get_game(slug)
    assert info.slug == slug == game.slug
    assert info.name and info.description
    assert info.matches_per_duel > 0 and info.matches_per_duel % 2 == 0
    assert info.smoke_test_matches > 0 and info.smoke_test_matches % 2 == 0
    assert info.move_time_limit > 0 and info.init_time_limit > 0
    assert info.memory_limit_mb > 0 and info.cpu_limit > 0


def test_random_playouts_end_within_the_move_bound(slug):
    game = get_game(slug)
    for playout in playouts(slug):
        final, _ = playout[-1]
        assert game.is_over(final), f"a random playout of {slug} did not end within {MAX_MOVES} moves"


def test_the_initial_state_is_running_with_seat_0_to_move(slug):
    game = get_game(slug)
    state = game.initial_state()
    assert not game.is_over(state)
    assert game.to_move(state) == 0
    assert game.legal_actions(state)


def test_legal_actions_are_sorted_unique_in_range_and_empty_exactly_when_over(slug):
    game = get_game(slug)
    for state in all_states(slug):
        legal = game.legal_actions(state)
        assert legal == sorted(set(legal))
        assert all(type(a) is int and 0 <= a < game.num_actions for a in legal)
        assert (legal == []) == game.is_over(state)
        if not game.is_over(state):
            assert game.to_move(state) in (0, 1)


def test_legal_actions_are_exactly_the_actions_apply_accepts(slug):
    game = get_game(slug)
    for state in sampled_states(slug):
        accepted = []
        for action in range(game.num_actions):
            try:
                game.apply(state, action)
            except IllegalActionError as exc:
                assert str(exc), "an IllegalActionError must say why"
            else:
                accepted.append(action)
        assert accepted == game.legal_actions(state)


def test_every_reached_state_is_valid_and_round_trips_through_json(slug):
    game = get_game(slug)
    for state in all_states(slug):
        game.validate_state(state)
        assert json.loads(json.dumps(state)) == state


def test_validate_state_rejects_an_empty_dict(slug):
    with pytest.raises(InvalidStateError):
        get_game(slug).validate_state({})


JUNK = [None, True, -5, 10**6, 2.5, "x", [], {}, [None], [[1, 2]]]


def corrupted_variants(state: State):
    """Copies of ``state`` with one field, or one element of a list field, replaced by junk."""
    for key, value in state.items():
        for junk in JUNK:
            yield {**copy.deepcopy(state), key: junk}
        if isinstance(value, list) and value:
            for junk in JUNK[:6]:
                changed = copy.deepcopy(state)
                changed[key][len(value) // 2] = junk
                yield changed
    yield {k: v for k, v in copy.deepcopy(state).items() if k != next(iter(state))}


def test_corrupted_states_fail_validation_only_with_invalid_state_error(slug):
    game = get_game(slug)
    for state in sampled_states(slug)[:12]:
        for bad in corrupted_variants(state):
            try:
                game.validate_state(bad)
            except InvalidStateError as exc:
                assert str(exc)


def test_a_turn_alternates_seats(slug):
    game = get_game(slug)
    if not game.alternating:
        pytest.skip(f"{slug} declares that its seats do not strictly alternate")
    for state, action in detailed_steps(slug):
        after = game.apply(state, action)
        if not game.is_over(after):
            assert game.to_move(after) == 1 - game.to_move(state)


def test_apply_never_mutates_its_input(slug):
    game = get_game(slug)
    for state, action in detailed_steps(slug):
        before = copy.deepcopy(state)
        game.apply(state, action)
        assert state == before


def test_returned_states_share_nothing_with_the_input_or_the_game(slug):
    game = get_game(slug)
    for state, action in detailed_steps(slug):
        before = copy.deepcopy(state)
        pristine_before = copy.deepcopy(before)
        after = game.apply(before, action)
        pristine_after = copy.deepcopy(after)
        scribble(after)
        assert before == pristine_before, "the new state shares a container with its input"
        again = game.apply(before, action)
        assert again == pristine_after, "the game kept a reference to a state it returned"
        scribble(before)
        assert again == pristine_after, "the new state shares a container with its input"


def test_initial_states_are_fresh_objects(slug):
    game = get_game(slug)
    pristine = game.initial_state()
    scribble(game.initial_state())
    assert game.initial_state() == pristine


def test_observations_are_fresh_arrays_of_a_stable_shape_and_dtype(slug):
    game = get_game(slug)
    first = game.observation(game.initial_state(), 0)
    assert isinstance(first, np.ndarray)
    for state, _ in [step for playout in playouts(slug)[:DETAILED_PLAYOUTS] for step in playout]:
        pristine_state = copy.deepcopy(state)
        for seat in (0, 1):
            obs = game.observation(state, seat)
            assert isinstance(obs, np.ndarray)
            assert (obs.shape, obs.dtype) == (first.shape, first.dtype)
            again = game.observation(state, seat)
            assert not np.shares_memory(obs, again)
            expected = again.copy()
            obs.fill(7)
            np.testing.assert_array_equal(game.observation(state, seat), expected)
        assert state == pristine_state


def test_the_observation_value_is_the_observation_as_json_and_leaves_the_state_alone(slug):
    """What the referee sends (``observation_value``) is exactly the observation's lists, in every state
    reached, for both seats, and computing it twice (a game may reuse parts) changes nothing."""
    game = get_game(slug)
    for state in all_states(slug):
        pristine_state = copy.deepcopy(state)
        for seat in (0, 1):
            expected = json.dumps(game.observation(state, seat).tolist())
            assert json.dumps(game.observation_value(state, seat)) == expected
            assert json.dumps(game.observation_value(state, seat)) == expected
        assert state == pristine_state


def test_rewards_are_zero_while_running_and_zero_sum_at_the_end(slug):
    game = get_game(slug)
    for playout in playouts(slug):
        for state, _ in playout[:-1]:
            assert game.rewards(state) == (0.0, 0.0)
        final, _ = playout[-1]
        r0, r1 = game.rewards(final)
        assert r0 + r1 == 0
        assert r0 in (-1.0, 0.0, 1.0)
        winner = game.winner(final)
        assert winner in (None, 0, 1)
        assert r0 == (0.0 if winner is None else (1.0 if winner == 0 else -1.0))


@pytest.mark.parametrize("action", [True, False, 0.0, "0", None, [0], -1], ids=repr)
def test_malformed_actions_are_illegal(slug, action):
    game = get_game(slug)
    with pytest.raises(IllegalActionError):
        game.apply(game.initial_state(), action)


def test_actions_past_the_last_id_are_illegal(slug):
    game = get_game(slug)
    with pytest.raises(IllegalActionError):
        game.apply(game.initial_state(), game.num_actions)


def test_numpy_integer_actions_are_accepted(slug):
    game = get_game(slug)
    state = game.initial_state()
    action = game.legal_actions(state)[0]
    assert game.apply(state, np.int64(action)) == game.apply(state, action)


def test_no_action_is_legal_once_the_game_is_over(slug):
    game = get_game(slug)
    final, _ = playouts(slug)[0][-1]
    for action in range(min(game.num_actions, 300)):
        with pytest.raises(IllegalActionError):
            game.apply(final, action)


def test_describe_action_gives_text_for_every_legal_action(slug):
    game = get_game(slug)
    for state, _ in detailed_steps(slug)[:50]:
        for action in game.legal_actions(state)[:300]:
            text = game.describe_action(state, action)
            assert isinstance(text, str) and text.strip()


def test_board_games_ship_a_renderer(slug):
    if get_info(slug).extra.get("synthetic"):
        pytest.skip("synthetic test games need no renderer")
    source = (static_dir(slug) / "renderer.js").read_text(encoding="utf-8")
    assert f'RLArenaRenderers["{slug}"]' in source


def test_board_games_ship_a_sample_replay_that_is_a_real_playout(slug):
    if get_info(slug).extra.get("synthetic"):
        pytest.skip("synthetic test games need no sample replay")
    game = get_game(slug)
    states = json.loads((static_dir(slug) / "sample_states.json").read_text(encoding="utf-8"))
    assert states[0] == game.initial_state(states[0].get("seed", 0))
    for before, after in itertools.pairwise(states):
        game.validate_state(after)
        assert any(game.apply(before, a) == after for a in game.legal_actions(before))
    assert game.is_over(states[-1])


# -- chance, private information, simultaneous moves ---------------------------------------------------


def test_the_seed_decides_the_initial_state_exactly_in_games_with_chance(slug):
    game = get_game(slug)
    initials = {json.dumps(game.initial_state(seed), sort_keys=True) for seed in range(20)}
    assert json.dumps(game.initial_state(5)) == json.dumps(game.initial_state(5))
    if game.has_chance:
        assert len(initials) > 1, "a game with chance must deal differently for some seeds"
    else:
        assert len(initials) == 1, "a game without chance must ignore the seed"


def test_the_seed_and_the_actions_replay_the_same_states(slug):
    game = get_game(slug)
    for playout in playouts(slug)[:DETAILED_PLAYOUTS]:
        state = game.initial_state(playout[0][0].get("seed", 0))
        assert state == playout[0][0]
        for (_, action), (expected, _) in itertools.pairwise(playout):
            state = game.apply(state, action)
            assert state == expected


def test_the_seats_acting_now_are_the_seat_to_move_and_at_most_both(slug):
    game = get_game(slug)
    for state in all_states(slug):
        seats = game.acting_seats(state)
        if game.is_over(state):
            assert seats == ()
            assert game.legal_actions_for(state, 0) == game.legal_actions_for(state, 1) == []
            continue
        assert seats[0] == game.to_move(state) and seats == tuple(sorted(set(seats)))
        assert len(seats) == 1 or (game.simultaneous and seats == (0, 1))
        assert game.legal_actions_for(state, game.to_move(state)) == game.legal_actions(state)
        for seat in (0, 1):
            if seat not in seats:
                assert game.legal_actions_for(state, seat) == []


def test_a_simultaneous_turn_hides_the_earlier_seats_choice_from_the_later_one(slug):
    game = get_game(slug)
    turns = [s for s in all_states(slug) if len(game.acting_seats(s)) == 2]
    assert bool(turns) == game.simultaneous
    for state in turns[:400]:
        later_legal = game.legal_actions_for(state, 1)
        assert later_legal
        for action in game.legal_actions_for(state, 0):
            after = game.apply(state, action)
            assert game.acting_seats(after) == (1,)
            assert game.legal_actions_for(after, 1) == later_legal
            np.testing.assert_array_equal(game.observation(after, 1), game.observation(state, 1))
            assert game.redact(after, 1) == game.redact(state, 1)
            assert game.redact(after, None) == game.redact(state, None)
            assert game.apply_joint(state, {0: action, 1: later_legal[0]}) == game.apply(
                after, later_legal[0]
            )


def test_apply_joint_needs_exactly_the_acting_seats(slug):
    game = get_game(slug)
    state = game.initial_state()
    seats = game.acting_seats(state)
    with pytest.raises(IllegalActionError):
        game.apply_joint(state, {})
    with pytest.raises(IllegalActionError):
        game.apply_joint(state, {seat: game.legal_actions_for(state, seat)[0] for seat in seats} | {7: 0})


def test_an_observation_depends_only_on_what_its_seat_may_see(slug):
    """States that ``redact`` shows alike to a seat give that seat the same observation."""
    game = get_game(slug)
    for seat in (0, 1):
        seen: dict[str, np.ndarray] = {}
        for state in all_states(slug):
            if game.is_over(state):
                continue
            key = json.dumps(game.redact(state, seat), sort_keys=True)
            obs = game.observation(state, seat)
            if key in seen:
                np.testing.assert_array_equal(obs, seen[key], err_msg=f"seat {seat} sees hidden information")
            else:
                seen[key] = obs


def test_redacted_states_hide_something_only_in_games_with_hidden_information(slug):
    game = get_game(slug)
    hid = False
    for state in all_states(slug)[:3000]:
        for viewer in (0, 1, None):
            shown = game.redact(state, viewer)
            if game.is_over(state) or not game.hidden_information:
                assert shown == state
            hid = hid or shown != state
            scribble(shown)
        game.validate_state(state)  # redacting never touches the state itself
    assert hid == game.hidden_information
