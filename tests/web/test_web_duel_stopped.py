"""A ladder duel that stops when decided (``run_duel.stopping``), as stored and shown: the record path keeps
the duel JSON's ``stop_rule``, ``planned_matches`` and ``stopped_early``; the duel page says "stopped early
after N of M matches, decided" (or that every planned match was played); the API's duel carries the
fields. Duels are played by the real referee (in-process harness) and recorded by the real record path."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from core.actions import Claim, claim_duel, record_duel_result
from core.models import Duel
from run_duel.duel_result import validate_duel_json
from run_duel.referee import play_duel
from run_duel.sandbox.base import LaunchSpec, Limits
from run_duel.sandbox.inprocess import InProcessSandbox
from run_duel.stopping import StopRule
from tests.web import factories

pytestmark = pytest.mark.django_db

EXAMPLES = Path(__file__).resolve().parents[2] / "example_players"
MINIMAX, RANDOM = EXAMPLES / "minimax", EXAMPLES / "random"


def _played(agent_1: Path, agent_2: Path, matches: int, **options: Any) -> dict[str, Any]:
    duel = play_duel(
        "tic-tac-toe",
        InProcessSandbox(),
        LaunchSpec(str(agent_1)),
        LaunchSpec(str(agent_2)),
        matches=matches,
        limits=Limits(move_timeout=5.0, init_timeout=30.0),
        pin_cpus=False,
        **options,
    )
    validate_duel_json(duel)
    return json.loads(json.dumps(duel))  # as it crosses the wire


def _recorded(a, b, duel_json: dict[str, Any]) -> Duel:
    duel = Duel.objects.create(
        environment=a.environment,
        revision_1=a.current_revision,
        revision_2=b.current_revision,
        num_matches=duel_json.get("planned_matches") or duel_json["num_matches"],
    )
    claimed = claim_duel(duel.pk, "test-worker")
    assert claimed is not None
    assert record_duel_result(Claim.of(claimed), duel_json)
    duel.refresh_from_db()
    return duel


def _note(client, duel: Duel) -> str | None:
    html = client.get(reverse("web:duel", args=[duel.pk])).content.decode()
    found = re.search(r'data-testid="duel-stopped">([^<]*)<', html)
    return found.group(1) if found else None


@pytest.fixture
def players(alice, bob):
    env = factories.environment("tic-tac-toe")
    return (
        factories.competitor(alice, env, "perfect", is_public=True),
        factories.competitor(bob, env, "coin", is_public=True),
    )


def test_a_duel_stopped_early_is_stored_and_its_page_and_api_say_after_how_many_of_how_many(client, players):
    perfect, coin = players
    duel_json = _played(MINIMAX, RANDOM, 40, stop_rule=StopRule().to_spec())
    stopped = duel_json["stopped_early"]
    assert stopped is not None
    duel = _recorded(perfect, coin, duel_json)
    assert duel.planned_matches == 40 and duel.stop_rule == StopRule().to_spec()
    assert duel.stopped_early == stopped and duel.num_matches == stopped["after_matches"] < 40
    assert duel.matches.count() == stopped["after_matches"]

    note = _note(client, duel)
    assert note is not None
    assert note.startswith(f"Stopped early after {stopped['after_matches']} of 40 matches, decided: perfect ")
    assert "reached 20;" in note  # 1 / alpha with the default alpha 0.05

    api = client.get(reverse("web:api:duel-detail", args=[duel.pk])).json()
    assert api["planned_matches"] == 40 and api["num_matches"] == stopped["after_matches"]
    assert api["stopped_early"]["leader"] == "PLAYER_1" and api["stop_rule"]["rule"] == "sequential-pairs"


def test_an_undecided_duel_with_a_rule_says_it_played_every_planned_match(client, players):
    perfect, coin = players
    duel_json = _played(MINIMAX, MINIMAX, 8, stop_rule=StopRule())  # perfect play: all draws
    duel = _recorded(perfect, coin, duel_json)
    assert duel.planned_matches == duel.num_matches == 8 and duel.stopped_early is None
    assert _note(client, duel) == (
        "Played all 8 planned matches: the duel stops early only once one player is clearly stronger, and "
        "it was not decided before."
    )


def test_a_duel_without_a_rule_stores_no_stop_fields_and_its_page_says_nothing_of_stopping(client, players):
    perfect, coin = players
    duel = _recorded(perfect, coin, _played(MINIMAX, RANDOM, 4))
    assert duel.stop_rule is None and duel.planned_matches is None and duel.stopped_early is None
    assert _note(client, duel) is None
    api = client.get(reverse("web:api:duel-detail", args=[duel.pk])).json()
    assert api["stopped_early"] is None and api["planned_matches"] is None and api["stop_rule"] is None
