"""Agents that remember: the persistent data folder in the local sandbox, with and without bubblewrap.

Real duels through the real sandbox: what an agent writes in one duel it reads in the next, the cap holds
(the kernel's in bubblewrap, the read-back check without it), an opponent never reads it, links and
special files never leave the sandbox, and an agent that is not running at the end saves nothing.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path

import pytest
from run_duel_helpers import HAS_BWRAP, REPO, TrackingSandbox, assert_nothing_left

from run_duel.agent_data import (
    DATA_DIR_ENV,
    MAX_ENTRIES,
    MB,
    AgentData,
    DataError,
    archive_of,
    check_archive,
    fill_folder,
    read_folder,
)
from run_duel.api import LaunchSpec, Limits, play_duel

DATA_AGENT = REPO / "tests" / "run_duel" / "agents" / "data_agent"
RANDOM = REPO / "example_players" / "random"
needs_bwrap = pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is not installed")


def members(archive: bytes) -> dict[str, bytes | None]:
    """Path -> content (``None`` for a folder) of a data archive."""
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return {m.name: (tar.extractfile(m).read() if m.isreg() else None) for m in tar}


def tar_of(*entries: tuple[str, bytes | None, bytes]) -> bytes:
    """A tar of (name, content, tar type) entries."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, content, kind in entries:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind == tarfile.SYMTYPE:
                info.linkname = "/etc/passwd"
            info.size = len(content or b"")
            tar.addfile(info, io.BytesIO(content or b""))
    return buffer.getvalue()


def duel(
    sandbox,
    data: AgentData,
    *,
    mode: str = "count",
    data_mb: int = 1,
    secret: str = "",
    opponent: Path = RANDOM,
    opponent_env: dict[str, str] | None = None,
    opponent_data: AgentData | None = None,
):
    """One four-match Tic-tac-toe duel of the data agent (seat 1) against ``opponent``."""
    env = {"ARENA_DATA_MODE": mode, "ARENA_DATA_SECRET": secret}
    limits = Limits(data_mb=data_mb, init_timeout=20.0)
    return play_duel(
        "tic-tac-toe",
        sandbox,
        LaunchSpec(agent=str(DATA_AGENT), env=env, limits=limits, data=data),
        LaunchSpec(agent=str(opponent), env=opponent_env or {}, limits=limits, data=opponent_data),
        matches=4,
        pin_cpus=False,
    )


def test_what_an_agent_writes_in_one_duel_it_reads_in_the_next(any_sandbox: TrackingSandbox) -> None:
    data = AgentData()
    for number in range(3):
        result = duel(any_sandbox, data, secret="s3cret")
        assert result["player_1_errors"] == 0, result["matches"][0]["error_msg"]
        assert f"started with {number}" in result["player_1_log"]
        assert data.problem == "" and data.saved is not None
        saved = members(data.saved)
        assert saved["duels.txt"] == str(number + 1).encode()
        assert saved["notes/secret.txt"] == b"s3cret" and saved["notes"] is None
        data = AgentData(archive=data.saved)
    assert_nothing_left(any_sandbox)


def test_an_agent_without_a_data_folder_has_no_variable_and_a_seat_with_save_off_saves_nothing(
    any_sandbox: TrackingSandbox,
) -> None:
    probe = any_sandbox.launch(LaunchSpec(agent=str(RANDOM)))
    try:
        assert probe.data_root() is None
    finally:
        probe.kill()
    scratch = AgentData(archive=AgentData().archive, save=False)
    duel(any_sandbox, scratch)
    assert scratch.saved is None and scratch.problem == ""


@needs_bwrap
def test_the_cap_is_the_kernels_in_bubblewrap() -> None:
    sandbox = TrackingSandbox(use_bwrap=True)
    try:
        data = AgentData()
        result = duel(sandbox, data, mode="fill", data_mb=1)
    finally:
        sandbox.close()
    line = next(x for x in result["player_1_log"].splitlines() if x.startswith("filled"))
    written = int(line.split()[1])
    assert 0 < written <= MB and line.endswith("No space left on device"), line
    assert data.saved is not None and check_archive(data.saved, MB)[0] <= MB


def test_an_unisolated_agent_over_the_cap_keeps_its_previous_data() -> None:
    sandbox = TrackingSandbox(use_bwrap=False)
    before = AgentData()
    try:
        duel(sandbox, before)  # duels.txt = 1
        data = AgentData(archive=before.saved)
        duel(sandbox, data, mode="fill", data_mb=1)
    finally:
        sandbox.close()
    assert data.saved is None and "more than 1 MB" in data.problem


@needs_bwrap
def test_an_opponent_never_reads_the_data_folder() -> None:
    secret = f"secret-{uuid.uuid4().hex}"
    sandbox = TrackingSandbox(use_bwrap=True)
    try:
        data = AgentData()
        duel(sandbox, data, secret=secret)
        assert secret.encode() in members(data.saved)["notes/secret.txt"]
        # Seat 1 starts with the secret in its folder; seat 2 looks for it everywhere it can while both run.
        # It holds the secret in its own folder too (mine.txt): it must find that one, and only that one.
        snooper = AgentData(archive=archive_of({"mine.txt": secret.encode()}))
        result = duel(
            sandbox,
            AgentData(archive=data.saved),
            secret=secret,
            opponent=DATA_AGENT,
            opponent_env={"ARENA_DATA_MODE": "snoop", "ARENA_DATA_SECRET": secret},
            opponent_data=snooper,
        )
    finally:
        sandbox.close()
    found = [line.split()[1] for line in result["player_2_log"].splitlines() if line.startswith("FOUND")]
    assert found, result["player_2_log"]  # the search works: it finds its own copy
    assert all(path.endswith("arena-data/mine.txt") for path in found), found
    assert members(snooper.saved) == {"mine.txt": secret.encode()}


def test_links_and_special_files_never_leave_the_sandbox(any_sandbox: TrackingSandbox) -> None:
    data = AgentData()
    duel(any_sandbox, data, mode="hostile")
    assert data.saved is not None
    assert members(data.saved) == {"kept.txt": b"kept"}
    assert "passwd-link" in data.problem and "pipe" in data.problem


def test_an_agent_not_running_at_the_end_keeps_what_it_had(any_sandbox: TrackingSandbox) -> None:
    before = AgentData()
    duel(any_sandbox, before)
    data = AgentData(archive=before.saved)
    result = duel(any_sandbox, data, mode="exit")
    assert result["player_1_errors"] == 4
    assert data.saved is None and "not running at the end" in data.problem


def test_archives_that_break_the_rules_are_refused(tmp_path: Path) -> None:
    assert check_archive(tar_of(("a/b.txt", b"hi", tarfile.REGTYPE)), MB) == (2, 1)
    bad = {
        "../escape": tar_of(("../escape", b"x", tarfile.REGTYPE)),
        "absolute": tar_of(("/etc/cron.d/x", b"x", tarfile.REGTYPE)),
        "link": tar_of(("link", None, tarfile.SYMTYPE)),
        "over the cap": tar_of(("big", b"x" * (MB + 1), tarfile.REGTYPE)),
        "too deep": tar_of(("/".join(["d"] * 40), b"x", tarfile.REGTYPE)),
        "not a tar": b"not a tar archive at all" * 40,
        "truncated": archive_of({"f": b"x" * 4000})[:2048],
    }
    for why, archive in bad.items():
        with pytest.raises(DataError):
            check_archive(archive, MB)
        target = tmp_path / why.replace(" ", "_")
        target.mkdir()
        with pytest.raises(DataError):
            fill_folder(archive, str(target), MB)
        assert list(target.iterdir()) == [], why  # nothing written before the archive was refused
    many = tmp_path / "many"
    many.mkdir()
    for i in range(MAX_ENTRIES + 1):
        (many / str(i)).touch()
    with pytest.raises(DataError, match="more than"):
        read_folder(str(many), MB)


def test_the_cli_keeps_a_data_folder_between_runs(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    command = [
        sys.executable,
        "-m",
        "run_duel",
        "--env",
        "tic-tac-toe",
        "--player-1",
        str(DATA_AGENT),
        "--player-2",
        str(RANDOM),
        "--matches",
        "2",
        "--no-states",
        "--no-pin",
        "--data-1",
        str(folder),
    ]
    if not HAS_BWRAP:
        command.append("--no-bwrap")
    for number in range(2):
        done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False, timeout=120)
        assert done.returncode == 0, done.stderr
        assert f"started with {number}" in json.loads(done.stdout)["player_1_log"]
        assert (folder / "duels.txt").read_text() == str(number + 1)
    assert DATA_DIR_ENV == "ARENA_DATA_DIR"
