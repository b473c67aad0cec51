"""This process's warm containers (one ``WarmPool`` per reuse policy and runtime folder) and what it
removes when it exits: its live agent containers first, then its idle warm ones.

Pools are per process: a forked worker starts with none. A Celery pool process ends with ``os._exit``,
which skips ``atexit``, so the platform calls ``close_warm_pools`` itself (``duel_runner.containers``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import threading
from pathlib import Path

from run_duel.sandbox.docker_config import RUNTIME_PREFIX
from run_duel.sandbox.docker_engine import Remover
from run_duel.sandbox.docker_process import kill_live_agents
from run_duel.sandbox.docker_warm import ReusePolicy, WarmPool, new_pool_root

_POOLS: dict[tuple[int, str, ReusePolicy], WarmPool] = {}
_POOLS_LOCK = threading.Lock()
_POOL_REMOVER: dict[int, Remover] = {}


def warm_pool(policy: ReusePolicy, base: Path) -> WarmPool:
    """This process's pool of warm containers for ``policy`` under the runtime folder ``base`` (pools
    are per process: a forked worker starts with none)."""
    key = (os.getpid(), str(base), policy)
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            remover = _POOL_REMOVER.setdefault(os.getpid(), Remover())
            pool = _POOLS[key] = WarmPool(policy, new_pool_root(base, RUNTIME_PREFIX), remover.remove)
        return pool


def close_warm_pools() -> None:
    """Remove every idle warm container of this process and wait for the removals."""
    with _POOLS_LOCK:
        pools = [pool for key, pool in _POOLS.items() if key[0] == os.getpid()]
        for key in [key for key in _POOLS if key[0] == os.getpid()]:
            del _POOLS[key]
        remover = _POOL_REMOVER.pop(os.getpid(), None)
    for pool in pools:
        pool.close()
        shutil.rmtree(pool.root, ignore_errors=True)
    if remover is not None:
        remover.join()


@atexit.register
def _at_exit() -> None:
    """On interpreter exit: the live agents' containers, then the idle warm ones."""
    kill_live_agents()
    close_warm_pools()
