"""The duel JSON contract: the schema requires every rl-arena field and the validator checks the sums."""

from __future__ import annotations

import copy
import json

import pytest

from run_duel.api import get_sandbox
from run_duel.duel_result import (
    DUEL_FIELDS,
    MATCH_FIELDS,
    SCHEMA_PATH,
    DuelResultError,
    aggregate,
    validate_duel_json,
)
from run_duel.sandbox.local import LocalSandbox


def match(result="PLAYER_1_WIN", p1=1.0, p2=0.0, first="PLAYER_1"):
    return {
        "result": result,
        "error_msg": "",
        "player_1_score": p1,
        "player_2_score": p2,
        "first_player": first,
        "states": [],
    }


def minimal_duel():
    matches = [match(), match("DRAW", 0.5, 0.5, "PLAYER_2"), match("PLAYER_2_ERROR", 1.0, 0.0)]
    return {**aggregate(matches), "error_msg": "", "matches": matches}


def test_a_minimal_rl_arena_duel_is_valid():
    duel = minimal_duel()
    validate_duel_json(duel)
    assert duel["result"] == "PLAYER_1_WIN" and duel["player_1_score"] == 2.5


def test_the_schema_requires_exactly_the_rl_arena_fields():
    schema = json.loads(SCHEMA_PATH.read_text())
    assert set(schema["required"]) == DUEL_FIELDS
    assert set(schema["$defs"]["match"]["required"]) == MATCH_FIELDS


@pytest.mark.parametrize("field", sorted(DUEL_FIELDS))
def test_every_duel_field_is_required(field):
    duel = minimal_duel()
    del duel[field]
    with pytest.raises(DuelResultError, match=field):
        validate_duel_json(duel)


@pytest.mark.parametrize("field", sorted(MATCH_FIELDS))
def test_every_match_field_is_required(field):
    duel = minimal_duel()
    del duel["matches"][0][field]
    with pytest.raises(DuelResultError, match=field):
        validate_duel_json(duel)


def test_counters_that_do_not_add_up_are_rejected():
    duel = minimal_duel()
    duel["draws"] = 2
    with pytest.raises(DuelResultError, match="draws"):
        validate_duel_json(duel)


def test_a_result_that_contradicts_the_scores_is_rejected():
    duel = minimal_duel()
    duel["result"] = "PLAYER_2_WIN"
    with pytest.raises(DuelResultError, match="result"):
        validate_duel_json(duel)


def test_match_scores_must_fit_the_match_result():
    duel = copy.deepcopy(minimal_duel())
    duel["matches"][1]["player_1_score"] = 1.0
    duel["matches"][1]["player_2_score"] = 0.0
    duel.update(aggregate(duel["matches"]))
    with pytest.raises(DuelResultError, match="do not fit"):
        validate_duel_json(duel)


def test_unknown_result_values_are_rejected():
    duel = minimal_duel()
    duel["matches"][0]["result"] = "PLAYER_1_VICTORY"
    with pytest.raises(DuelResultError):
        validate_duel_json(duel)


def test_get_sandbox_builds_the_local_sandbox_and_rejects_unknown_names():
    assert isinstance(get_sandbox("local", use_bwrap=False), LocalSandbox)
    with pytest.raises(ValueError, match="unknown sandbox"):
        get_sandbox("inprocess")
