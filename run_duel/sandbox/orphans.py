"""Agent containers nobody owns any more (their worker died, or the engine could not remove them when
asked), removed in bounded time.

A referee freezes the waiting agent's cgroup between moves (``cgroups.Freezer``). A referee killed while
one of its agents is frozen leaves that cgroup FROZEN, and a frozen task cannot die: the engine's
``remove --force`` then waits for an exit event that never comes and fails after about ten seconds. So
each orphan's freezer groups (the container's and any below it, e.g. a warm seat's own group) are thawed
before it is removed, a removal that fails is reported as such (and tried again next round), and a round
stops once its time budget is spent, leaving the rest for the next one: one wedged container never holds
up anything else.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path

from run_duel.sandbox import cgroups
from run_duel.sandbox.docker_client import get_client
from run_duel.sandbox.docker_config import (
    HOSTNAME,
    LABEL,
    LABEL_VALUE,
    RUNTIME_PREFIX,
    SOCKET_DIR_IN_CONTAINER,
    proc_start_time,
    runtime_base,
)
from run_duel.sandbox.docker_engine import remove_container

log = logging.getLogger(__name__)

#: A round of :func:`reap_orphans` starts no new removal after this many seconds.
ROUND_BUDGET_S = 20.0
#: How long one removal may keep retrying an engine that fails (restarting) before it is left for later.
REMOVE_PATIENCE_S = 2.0


def thaw_container(container_id: str) -> int:
    """Thaw every frozen freezer group of container ``container_id`` (its own and those below it, on cgroup
    v1 and v2), so its processes can be killed. Returns how many groups were frozen. Harmless on a
    container that is not frozen or whose groups are gone."""
    thawed = 0
    for key, top in cgroups.container_dirs(container_id).items():
        if key not in ("freezer", cgroups.V2):
            continue
        name, frozen_values, thaw_value = (
            ("cgroup.freeze", ("1",), b"0")
            if key == cgroups.V2
            else ("freezer.state", ("FROZEN", "FREEZING"), b"THAWED")
        )
        for folder, _dirs, files in os.walk(top):
            if name not in files:
                continue
            path = Path(folder) / name
            try:
                if path.read_text().strip() in frozen_values:
                    path.write_bytes(thaw_value)
                    thawed += 1
            except OSError:  # the group went away meanwhile: nothing left to thaw
                continue
    return thawed


def reap_orphans(max_age_s: float = 6 * 3600, *, budget_s: float = ROUND_BUDGET_S) -> list[str]:
    """Remove rl-arena agent containers whose owner process is gone (on this host), whose owner already
    killed them while the engine was down (their socket folder is gone), or older than ``max_age_s``
    (thawed first); also delete socket folders of dead owners. Returns the ids of the containers really
    removed: one the engine would not remove is logged and left for the next round, as is everything once
    ``budget_s`` is spent."""
    removed: list[str] = []
    now = time.time()
    deadline = time.monotonic() + budget_s
    base = runtime_base(None)
    containers = get_client().api.containers(all=True, filters={"label": f"{LABEL}={LABEL_VALUE}"})
    for summary in containers:
        labels = summary.get("Labels") or {}
        age = now - float(summary.get("Created") or now)
        if _owned(labels, summary, base, age, max_age_s):
            continue
        if time.monotonic() >= deadline:
            log.warning(
                "orphan containers: this round's %.0f s are spent; the rest wait for the next", budget_s
            )
            break
        container_id = summary["Id"]
        if thaw_container(container_id):
            log.warning(
                "orphan container %s was frozen (its referee died mid-duel): thawed", container_id[:12]
            )
        if remove_container(container_id, patience=REMOVE_PATIENCE_S):
            removed.append(container_id)
        else:
            log.error("orphan container %s could not be removed; trying again next round", container_id[:12])
    for folder in base.glob(f"{RUNTIME_PREFIX}*-*"):
        try:
            pid = int(folder.name[len(RUNTIME_PREFIX) :].split("-", 1)[0])
        except ValueError:
            continue
        if pid != os.getpid() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)
    return removed


def _owned(labels: dict, summary: dict, base: Path, age: float, max_age_s: float) -> bool:
    """Whether the container still belongs to a live referee (of this process or another)."""
    return _owner_alive(labels) and age <= max_age_s and not _socket_folder_gone(summary, base)


def _owner_alive(labels: dict[str, str]) -> bool:
    if labels.get(f"{LABEL}.owner-host") != HOSTNAME:
        return True  # another machine's container: only age can tell
    try:
        pid = int(labels.get(f"{LABEL}.owner-pid", ""))
    except ValueError:
        return False
    start = proc_start_time(pid)
    return bool(start) and start == labels.get(f"{LABEL}.owner-start", start)


def _socket_folder_gone(summary: dict, base: Path) -> bool:
    """Whether the container's socket folder, under this host's runtime folder, was deleted: its owner
    killed it (``kill`` always deletes the folder) but the engine, dead at the time, could not remove it."""
    for mount in summary.get("Mounts") or []:
        if mount.get("Destination") == SOCKET_DIR_IN_CONTAINER:
            source = Path(mount.get("Source") or "")
            return base in source.parents and not source.exists()
    return False
