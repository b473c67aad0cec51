"""Game records as a Parquet file: the columns of ``core.records``' step lines, for columnar training.

One row per step, one row group per keyset batch (so memory stays bounded by a batch). Columns:

| column | type | what |
|---|---|---|
| ``match_id``, ``duel_id`` | int64 | ids |
| ``step`` | int32 | move number in the match, from 0 |
| ``player``, ``seat`` | string, int8 | who moved (``PLAYER_1``/``PLAYER_2``), from which seat (0: first) |
| ``observation`` | list<float32> | what that seat's agent received, flattened (row-major) |
| ``observation_shape`` | list<int32> | its shape, to reshape ``observation`` |
| ``action_mask`` | list<int8> | 1 for each legal action, ``num_actions`` long |
| ``action``, ``reward``, ``done`` | int64, float64, bool | as in the JSON lines |
| ``reward_player_1``, ``reward_player_2`` | float64, null | both final rewards, on a match's last step only |
| ``result``, ``environment``, ``played_at`` | string | as in the JSON lines |
| ``state``, ``final_state`` | string (JSON) | the full state before the move, and after the last one |

Needs ``pyarrow`` (the ``train`` extra); ``ParquetUnavailable`` says so when it is missing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from core.models import Environment, User
from core.records import RecordFilter, iter_record_batches


class ParquetUnavailable(RuntimeError):
    """``pyarrow`` is not installed."""


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("match_id", pa.int64()),
            ("duel_id", pa.int64()),
            ("step", pa.int32()),
            ("player", pa.string()),
            ("seat", pa.int8()),
            ("observation", pa.list_(pa.float32())),
            ("observation_shape", pa.list_(pa.int32())),
            ("action_mask", pa.list_(pa.int8())),
            ("action", pa.int64()),
            ("reward", pa.float64()),
            ("done", pa.bool_()),
            ("reward_player_1", pa.float64()),
            ("reward_player_2", pa.float64()),
            ("result", pa.string()),
            ("environment", pa.string()),
            ("played_at", pa.string()),
            ("state", pa.string()),
            ("final_state", pa.string()),
        ]
    )


def _columns(batch: list[dict[str, Any]]) -> dict[str, list[Any]]:
    columns: dict[str, list[Any]] = {name: [] for name in _schema().names}
    for line in batch:
        obs = np.asarray(line["observation"], dtype=np.float32)
        rewards = line.get("rewards") or {}
        columns["match_id"].append(line["match_id"])
        columns["duel_id"].append(line["duel_id"])
        columns["step"].append(line["step"])
        columns["player"].append(line["player"])
        columns["seat"].append(line["seat"])
        columns["observation"].append(obs.ravel().tolist())
        columns["observation_shape"].append(list(obs.shape))
        columns["action_mask"].append(line["action_mask"])
        columns["action"].append(line["action"])
        columns["reward"].append(line["reward"])
        columns["done"].append(line["done"])
        columns["reward_player_1"].append(rewards.get("PLAYER_1"))
        columns["reward_player_2"].append(rewards.get("PLAYER_2"))
        columns["result"].append(line["result"])
        columns["environment"].append(line["environment"])
        columns["played_at"].append(line["played_at"])
        columns["state"].append(json.dumps(line["state"], separators=(",", ":")))
        final = line.get("final_state")
        columns["final_state"].append(None if final is None else json.dumps(final, separators=(",", ":")))
    return columns


def write_parquet(environment: Environment, viewer: User | None, flt: RecordFilter, out: Path) -> int:
    """Write the records ``flt`` selects to ``out`` (Parquet, zstd); returns the number of rows."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ParquetUnavailable("Parquet export needs pyarrow: pip install -e '.[train]'") from exc
    schema = _schema()
    rows = 0
    with pq.ParquetWriter(out, schema, compression="zstd") as writer:
        for batch in iter_record_batches(environment, viewer, flt):
            writer.write_table(pa.Table.from_pydict(_columns(batch), schema=schema))
            rows += len(batch)
    return rows
