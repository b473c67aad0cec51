"""The duel JSON: field names, scoring, aggregation of matches and validation against the schema.

The format is the rl-arena one (``/work/shared/MISSION.md``): every field listed there is always present
with the same name and meaning; the fields added here (``error_kind``, ``actions``, ``move_times``, ...)
are extras. ``run_duel/duel_result.schema.json`` is the machine-readable contract.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from run_duel.outcomes import DuelResult, ErrorKind, MatchResult

SCHEMA_PATH = Path(__file__).resolve().parent / "duel_result.schema.json"

#: Fields of the duel object required by the rl-arena format.
DUEL_FIELDS = frozenset(
    {
        "result",
        "error_msg",
        "num_matches",
        "player_1_errors",
        "player_2_errors",
        "other_errors",
        "player_1_wins",
        "player_2_wins",
        "draws",
        "player_1_score",
        "player_2_score",
        "matches",
    }
)
#: Fields of each match object required by the rl-arena format.
MATCH_FIELDS = frozenset(
    {"result", "error_msg", "player_1_score", "player_2_score", "first_player", "states"}
)

# The values of run_duel.outcomes, under the names the referee has always used.
ERROR = DuelResult.ERROR
PLAYER_1_WIN = DuelResult.PLAYER_1_WIN
PLAYER_2_WIN = DuelResult.PLAYER_2_WIN
DRAW = DuelResult.DRAW
PLAYER_1_ERROR = MatchResult.PLAYER_1_ERROR
PLAYER_2_ERROR = MatchResult.PLAYER_2_ERROR
OTHER_ERROR = MatchResult.OTHER_ERROR

WIN = {0: PLAYER_1_WIN, 1: PLAYER_2_WIN}
PLAYER_ERROR = {0: PLAYER_1_ERROR, 1: PLAYER_2_ERROR}
PLAYER_NAME = {0: "PLAYER_1", 1: "PLAYER_2"}
INFRA = ErrorKind.INFRA

#: Match score of each result for (player 1, player 2).
MATCH_SCORES: dict[str, tuple[float, float]] = {
    PLAYER_1_WIN: (1.0, 0.0),
    PLAYER_2_WIN: (0.0, 1.0),
    DRAW: (0.5, 0.5),
    PLAYER_1_ERROR: (0.0, 1.0),
    PLAYER_2_ERROR: (1.0, 0.0),
    OTHER_ERROR: (0.0, 0.0),
}


class DuelResultError(ValueError):
    """The object is not a valid duel result; the message lists every problem found."""


def aggregate(matches: list[dict[str, Any]]) -> dict[str, Any]:
    """Counters, scores and the duel ``result`` computed from the match objects (no ERROR logic here)."""
    results = [m["result"] for m in matches]
    p1 = round(sum(m["player_1_score"] for m in matches), 6)
    p2 = round(sum(m["player_2_score"] for m in matches), 6)
    outcome = PLAYER_1_WIN if p1 > p2 else PLAYER_2_WIN if p2 > p1 else DRAW
    return {
        "result": outcome,
        "num_matches": len(matches),
        "player_1_errors": results.count(PLAYER_1_ERROR),
        "player_2_errors": results.count(PLAYER_2_ERROR),
        "other_errors": results.count(OTHER_ERROR),
        "player_1_wins": results.count(PLAYER_1_WIN),
        "player_2_wins": results.count(PLAYER_2_WIN),
        "draws": results.count(DRAW),
        "player_1_score": p1,
        "player_2_score": p2,
    }


@functools.cache
def _validator() -> Any:
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


def validate_duel_json(duel: Any) -> None:
    """Raise ``DuelResultError`` unless ``duel`` matches the schema and its counters add up."""
    problems = [
        f"{'/'.join(str(p) for p in err.absolute_path) or '(root)'}: {err.message}"
        for err in _validator().iter_errors(duel)
    ]
    if not problems:
        counted = aggregate(duel["matches"])
        for key, value in counted.items():
            if key == "result":
                continue
            if isinstance(value, float):
                if abs(duel[key] - value) > 1e-6:
                    problems.append(f"{key} is {duel[key]} but the matches add up to {value}")
            elif duel[key] != value:
                problems.append(f"{key} is {duel[key]} but the matches give {value}")
        if duel["result"] != ERROR and duel["result"] != counted["result"]:
            problems.append(f"result is {duel['result']} but the scores give {counted['result']}")
        for i, match in enumerate(duel["matches"]):
            expected = MATCH_SCORES[match["result"]]
            got = (match["player_1_score"], match["player_2_score"])
            both_failed = match["result"] in (PLAYER_1_ERROR, PLAYER_2_ERROR) and got == (0.0, 0.0)
            if got != expected and not both_failed:
                problems.append(f"matches/{i}: scores {got} do not fit result {match['result']}")
    if problems:
        raise DuelResultError("invalid duel result:\n  " + "\n  ".join(problems[:50]))
