"""A full disk on a worker: the spool leaves no partial file, and the worker reports itself unhealthy
(it takes no job) while its spool's disk could not keep a result. A real full file system: a 64 KiB tmpfs
mounted over ``DATA_DIR/spool`` (needs root; skipped otherwise)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.actions.jobs import Claim
from core.jobs import health, spool
from tests.small_disk import small_tmpfs


@pytest.fixture
def full_spool(settings) -> Iterator[Path]:
    with small_tmpfs(spool.spool_dir(), "64k") as folder:
        yield folder


def test_a_result_that_does_not_fit_leaves_no_partial_file(full_spool):
    outcome = {"result": "DRAW", "player_1_log": "x" * (1024 * 1024)}  # 1 MiB: more than the disk holds
    with pytest.raises(OSError):
        spool.put("duel", Claim(1, 1, 1, "w"), outcome)
    assert list(full_spool.iterdir()) == []


def test_a_worker_whose_spool_disk_is_full_is_unhealthy_until_it_has_room(full_spool, settings):
    settings.SANDBOX = "local"
    settings.SPOOL_MIN_FREE_MB = 1  # the 64 KiB disk has less
    problem = health.probe_now()
    assert problem is not None and "SPOOL_MIN_FREE_MB" in problem, problem
    settings.SPOOL_MIN_FREE_MB = 0
    assert health.probe_now() is None


def test_temporary_files_of_dead_writers_are_removed(settings):
    folder = spool.spool_dir()
    folder.mkdir(parents=True, exist_ok=True)
    dead = _dead_pid()
    litter = folder / f"duel-1-1.tmp{dead}"
    litter.write_text("")
    mine = folder / f"duel-2-1.tmp{os.getpid()}"  # a write in progress in this process: kept
    mine.write_text("")
    assert list(spool.pending()) == []
    assert not litter.exists() and mine.exists()


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid
