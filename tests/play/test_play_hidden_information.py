"""Live play of games with chance and private cards: a fresh deal per game, and the play page's JSON shows
the person only what its seat may see until the game is over."""

from __future__ import annotations

import time
from typing import Any

import pytest

from core.actions.play import human_move, start_play_session
from core.models import PlaySession
from environments import get_game
from web.views.play import session_json

pytestmark = pytest.mark.django_db

LEDUC = get_game("leduc-holdem")


def test_each_game_is_dealt_from_its_own_seed_and_records_the_deal(make_competitor, make_user):
    comp = make_competitor(player="random", env="leduc-holdem")
    # One live game per person and opponent: six people each open one.
    sessions = [start_play_session(make_user(), comp.pk) for _ in range(6)]
    assert len({s.state["seed"] for s in sessions}) > 1
    for session in sessions:
        assert session.state == LEDUC.initial_state(session.state["seed"])
        assert session.states == [session.state]  # replays start with the deal


def test_the_play_page_hides_the_agents_card_until_the_game_is_over(make_competitor, make_user):
    comp = make_competitor(player="random", env="leduc-holdem")
    person = make_user()
    session = start_play_session(person, comp.pk)
    session.status = PlaySession.Status.PLAYING
    session.save(update_fields=["status"])
    data: dict[str, Any] = session_json(session, person)
    human, agent = session.human_seat, 1 - session.human_seat
    assert data["state"]["cards"][human] == session.state["cards"][human]
    assert data["state"]["cards"][agent] is None
    assert data["state"]["seed"] is None  # the seed would give the deal away

    state = session.state
    while not LEDUC.is_over(state):
        state = LEDUC.apply(state, LEDUC.legal_actions(state)[0])
    session.state = state
    session.status = PlaySession.Status.FINISHED
    session.save(update_fields=["state", "status"])
    assert session_json(session, person)["state"] == state


def test_board_games_show_the_whole_board_while_running(make_competitor, make_user):
    comp = make_competitor(player="random", env="connect-four")
    person = make_user()
    session = start_play_session(person, comp.pk)
    session.status = PlaySession.Status.PLAYING
    session.save(update_fields=["status"])
    assert session_json(session, person)["state"] == get_game("connect-four").initial_state()
    assert session.states == []


@pytest.mark.parametrize(
    ("slug", "player"), [("leduc-holdem", "leduc_cfr"), ("goofspiel", "goofspiel_matcher")]
)
def test_a_game_against_the_example_agent_plays_to_the_end_and_never_shows_hidden_parts(
    slug, player, make_competitor, make_user, run_agent
):
    """The person sits second (Goofspiel: the agent bids first on every turn, and the person must not see
    that bid); each page the person polls shows its own view only; the stored game replays from its deal."""
    game = get_game(slug)
    person = make_user()
    comp = make_competitor(player, env=slug)
    session = start_play_session(person, comp.pk, human_first=False)
    task = run_agent(session.pk)
    while True:
        session = PlaySession.objects.select_related("environment", "revision__competitor").get(pk=session.pk)
        if session.status == PlaySession.Status.FINISHED:
            break
        page = session_json(session, person)
        running = session.status == PlaySession.Status.PLAYING and not game.is_over(session.state)
        if running:
            assert page["state"] == game.redact(session.state, session.human_seat)
            if slug == "goofspiel":
                assert page["state"]["pending"] is None  # the agent's bid of this turn stays face down
            else:
                assert page["state"]["cards"][session.agent_seat] is None
        if page["your_turn"]:
            human_move(session.pk, person, page["legal_actions"][0])
        else:
            time.sleep(0.02)
    assert task.join() is not None
    assert session.result in (
        PlaySession.Result.HUMAN_WIN,
        PlaySession.Result.AGENT_WIN,
        PlaySession.Result.DRAW,
    ), session.error_msg
    state = session.states[0]
    assert state == game.initial_state(state["seed"])
    for action, stored in zip(session.actions, session.states[1:], strict=True):
        state = game.apply(state, action)
        assert state == stored
    assert game.is_over(state)
    final = session_json(session, person)
    assert final["state"] == state and final["states"][0] == session.states[0]
