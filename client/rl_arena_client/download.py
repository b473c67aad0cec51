"""``rl-arena download``: a competitor's duels with every match's replay, and, for its owner, the logs.

Layout of the output folder (re-running it fetches only what is missing or was unfinished)::

    competitor.json
    duels/<duel id>.json       the duel, its matches with states, actions, moves, move times
                               (+ player_1_log / player_2_log: your side's stderr, when you own it)
    revisions/v<N>.json        build and smoke-test logs of each revision (owner only)
    data.tar                   its persistent data folder as the arena keeps it (owner only)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from rl_arena_client.api import Client, CliError


@dataclass
class Summary:
    """What a download fetched."""

    duels: int = 0
    skipped: int = 0
    matches: int = 0
    revision_logs: int = 0
    data_bytes: int | None = None  # the data folder's tar (None: not fetched, not yours)


def _write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".part")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def find_competitor(client: Client, ref: str) -> dict[str, Any]:
    """A competitor by id, or by the name of one of yours."""
    if ref.isdigit():
        return client.request("GET", f"/api/competitors/{ref}/")
    if not client.token:
        raise CliError(f"{ref!r} is not an id: log in to find your competitors by name")
    mine = [c for c in client.pages("/api/competitors/?mine=1") if c["name"] == ref]
    if not mine:
        raise CliError(f"you have no competitor named {ref!r} (give a competitor id for someone else's)")
    if len(mine) > 1:
        games = ", ".join(f"{c['environment']} (id {c['id']})" for c in mine)
        raise CliError(f"you have several competitors named {ref!r}: {games}; give the id")
    return mine[0]


def download(client: Client, ref: str, out: Path, *, limit: int | None, log: TextIO) -> Summary:
    """Fetch ``ref``'s duels (newest first, at most ``limit``) and, for its owner, its revisions' logs."""
    competitor = find_competitor(client, ref)
    cid = competitor["id"]
    out.mkdir(parents=True, exist_ok=True)
    _write(out / "competitor.json", competitor)
    summary = Summary()
    for i, duel in enumerate(client.pages(f"/api/duels/?competitor={cid}")):
        if limit is not None and i >= limit:
            break
        path = out / "duels" / f"{duel['id']}.json"
        if path.is_file():
            try:
                if json.loads(path.read_text(encoding="utf-8")).get("state") in ("FINISHED", "FAILED"):
                    summary.skipped += 1
                    continue
            except ValueError:
                pass  # a damaged file: fetch it again
        full = client.request("GET", f"/api/duels/{duel['id']}/replays/")
        _write(path, full)
        summary.duels += 1
        summary.matches += len(full.get("matches") or [])
        if log.isatty():
            log.write(f"\r{summary.duels + summary.skipped} duels")
            log.flush()
    if log.isatty():
        log.write("\n")
    if client.token:
        for rev in client.pages(f"/api/revisions/?competitor={cid}"):
            logs = client.request("GET", f"/api/revisions/{rev['id']}/logs/")
            _write(out / "revisions" / f"v{rev['version']}.json", {**rev, **logs})
            summary.revision_logs += 1
        try:
            archive = client.fetch_bytes(f"/api/competitors/{cid}/data/archive/", "application/x-tar")
        except CliError as exc:
            if exc.status != 404:  # 404: someone else's competitor (its folder is its owner's only)
                raise
        else:
            tmp = out / "data.tar.part"
            tmp.write_bytes(archive)
            os.replace(tmp, out / "data.tar")
            summary.data_bytes = len(archive)
    return summary
