"""Live play against an agent in the original rl-arena's format: the live game launches the revision
with its format, as duels do."""

from __future__ import annotations

import pytest
from test_play_actions import _play_to_the_end

from core.actions.play import start_play_session
from core.models import PlaySession

pytestmark = pytest.mark.django_db


def test_a_person_plays_their_minimax_to_the_end(make_competitor, make_user, run_agent):
    comp = make_competitor("rl_arena/minimax")
    comp.current_revision.agent_format = "rl-arena"
    comp.current_revision.save(update_fields=["agent_format"])
    person = make_user()
    session = start_play_session(person, comp.pk)
    task = run_agent(session.pk)
    finished = _play_to_the_end(session.pk, person)
    assert task.join() == "finished"
    # the person always plays the leftmost free column: minimax wins, without an agent error
    assert finished.result == PlaySession.Result.AGENT_WIN, (finished.result, finished.error_msg)
