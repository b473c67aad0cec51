"""Read an arena's game records for training: JSON Lines (``.jsonl``, ``.jsonl.gz``) or Parquet.

Each step comes back as a dict with the fields of the export (``docs/PROTOCOL.md`` "Game records") and
with ``observation`` as a numpy array of the shape the agent received and ``action_mask`` as a boolean
numpy array; Parquet needs ``pyarrow``. ``seat_episodes`` regroups the steps into each seat's own
sequence per match, which is what an offline learner replays: a seat never sees the other's observations.

    from rl_arena_client.records import read_records, seat_episodes
    for (match_id, seat), steps in seat_episodes(read_records("connect-four.parquet")).items():
        obs = [s["observation"] for s in steps]; acts = [s["action"] for s in steps]
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np


def _finish(step: dict[str, Any], shape: list[int] | None = None) -> dict[str, Any]:
    obs = np.asarray(step["observation"], dtype=np.float32)
    step["observation"] = obs.reshape(shape) if shape is not None else obs
    step["action_mask"] = np.asarray(step["action_mask"], dtype=bool)
    return step


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield _finish(json.loads(line))


def _read_parquet(path: Path) -> Iterator[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise RuntimeError("reading Parquet records needs pyarrow: pip install pyarrow") from exc
    parquet = pq.ParquetFile(path)
    for group in range(parquet.num_row_groups):
        for row in parquet.read_row_group(group).to_pylist():
            shape = row.pop("observation_shape")
            for name in ("state", "final_state"):
                row[name] = None if row[name] is None else json.loads(row[name])
            p1, p2 = row.pop("reward_player_1"), row.pop("reward_player_2")
            if p1 is not None:
                row["rewards"] = {"PLAYER_1": p1, "PLAYER_2": p2}
            if row["final_state"] is None:
                del row["final_state"]
            yield _finish(row, shape)


def read_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """The steps of a records file, in file order."""
    path = Path(path)
    if path.suffix == ".parquet":
        return _read_parquet(path)
    return _read_jsonl(path)


def seat_episodes(steps: Iterable[dict[str, Any]]) -> dict[tuple[int, int], list[dict[str, Any]]]:
    """The steps grouped by (match id, seat), each group in move order."""
    episodes: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for step in steps:
        episodes.setdefault((step["match_id"], step["seat"]), []).append(step)
    for group in episodes.values():
        group.sort(key=lambda s: s["step"])
    return episodes
