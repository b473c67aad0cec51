"""What an agent container is made of: its labels, its limits and mounts (``container_config``), and the
names shared by the Docker sandbox and the orphan reaper.

Container settings: user 10001, ``network_mode=none``, read-only root, a size-capped ``noexec`` tmpfs at
/tmp, all capabilities dropped, ``no-new-privileges``, a pids limit, memory limit == memory+swap limit, a
CPU quota, ulimits (file size, open files, no core dumps, a host-wide nproc backstop), capped json-file
logs, an init process (tini), labels for the reaper, and only the environment variables of
``LaunchSpec.env``.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any

from docker.types import LogConfig, Ulimit

from run_duel.agent_data import DATA_DIR_ENV, DATA_DIR_IN_SANDBOX, MB
from run_duel.sandbox.base import HARNESS_PYTHON_FLAGS, LaunchSpec, Limits, runtime_dir
from run_duel.sandbox.docker_client import get_client

AGENT_UID = 10001
SOCKET_DIR_IN_CONTAINER = "/run/arena"
SOCKET_NAME = "agent.sock"
#: The harness copied into each warm container's launch folder (the factory runs this checkout's).
HARNESS_NAME = "arena_harness.py"
#: The agent's thread-count variables, in the container (cold) or each agent process (warm).
BASE_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
LABEL = "rl-arena"
LABEL_VALUE = "agent"
#: RLIMIT_NPROC counts every process of uid 10001 on the host (all agents share that uid), so it is only
#: a backstop; the per-container cap is the pids cgroup (``Limits.pids``).
NPROC_BACKSTOP = 4096
RUNTIME_PREFIX = "rl-arena-docker-"


def runtime_base(folder: str | Path | None) -> Path:
    """Where this host's launch folders go: ``folder``, else ``$AGENT_RUNTIME_DIR`` or the temp folder."""
    return Path(folder) if folder else runtime_dir()


def proc_start_time(pid: int) -> str:
    """The kernel start time of ``pid`` (ticks since boot) — with the pid, identifies a process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
        return data[data.rindex(b")") + 2 :].split()[19].decode()
    except (OSError, ValueError, IndexError):
        return ""


_OWNER_PID = os.getpid()
_OWNER_START = proc_start_time(_OWNER_PID)
HOSTNAME = socket.gethostname()


def owner_labels() -> dict[str, str]:
    """The labels naming the process that owns a container (``run_duel.sandbox.orphans`` reads them)."""
    pid = os.getpid()
    start = _OWNER_START if pid == _OWNER_PID else proc_start_time(pid)
    return {f"{LABEL}.owner-pid": str(pid), f"{LABEL}.owner-start": start, f"{LABEL}.owner-host": HOSTNAME}


def container_config(
    image: str, spec: LaunchSpec, socket_dir: str, *, agent_dir: str | None = None, warm: bool = False
) -> dict[str, Any]:
    """Keyword arguments for ``APIClient.create_container`` (host config included).

    With ``agent_dir`` (the image's entrypoint is our Python harness, ``warm_capable``) the container runs
    this checkout's harness, mounted with the launch folder, as ``python3 -I -B -u`` whatever the image's
    entrypoint says: an image built before the harness started isolated (``PYTHONPATH`` in its
    environment) never runs its packages' start-up hooks either. With ``warm`` too the container is a
    warm one (``docker_warm``): the harness runs in ``--warm`` mode (no init: the factory is PID 1), the
    container carries no duel labels (it serves many duels) and the duel's variables (``spec.env``) go
    to each agent process instead of the container."""
    limits: Limits = spec.limits
    warm_agent_dir = agent_dir if warm else None
    labels = {LABEL: LABEL_VALUE, f"{LABEL}.created": str(int(time.time()))}
    if warm_agent_dir is None:
        labels.update({f"{LABEL}.{key}": str(value) for key, value in spec.labels.items()})
    else:
        labels[f"{LABEL}.warm"] = "1"
        if "revision" in spec.labels:
            labels[f"{LABEL}.revision"] = str(spec.labels["revision"])
    labels.update(owner_labels())
    memory = limits.memory_mb * MB
    file_size = limits.file_size_mb * MB
    # Two json-file files of 2x log_bytes each: the engine keeps between 2x and 4x log_bytes on disk, so
    # the last log_bytes of output (JSON framing included) always survive a rotation.
    log_max = max(limits.log_bytes * 2, 64 * 1024)
    api = get_client().api
    host_config = api.create_host_config(
        binds={socket_dir: {"bind": SOCKET_DIR_IN_CONTAINER, "mode": "ro"}},
        network_mode="none",
        read_only=True,
        tmpfs={
            "/tmp":  # noqa: S108 - the container's own tmpfs
            f"rw,noexec,nosuid,nodev,size={limits.tmpfs_mb}m,mode=1777",
            **(
                {
                    DATA_DIR_IN_SANDBOX: f"rw,noexec,nosuid,nodev,size={limits.data_mb}m,mode=0700,"
                    f"uid={AGENT_UID},gid={AGENT_UID}"
                }
                if limits.data_mb > 0
                else {}
            ),
        },
        shm_size=16 * MB,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        pids_limit=limits.pids,
        mem_limit=memory,
        memswap_limit=memory,
        mem_swappiness=0,
        nano_cpus=int(limits.cpus * 1e9),
        ulimits=[
            Ulimit(name="fsize", soft=file_size, hard=file_size),
            Ulimit(name="nofile", soft=limits.open_files, hard=limits.open_files),
            Ulimit(name="core", soft=0, hard=0),
            Ulimit(name="nproc", soft=NPROC_BACKSTOP, hard=NPROC_BACKSTOP),
            Ulimit(name="cpu", soft=limits.cpu_time_s, hard=limits.cpu_time_s + 5),
        ],
        log_config=LogConfig(type="json-file", config={"max-size": str(log_max), "max-file": "2"}),
        init=warm_agent_dir is None,
        oom_score_adj=500,
        ipc_mode="private",
        auto_remove=False,
    )
    env = dict(BASE_ENV)
    command = ["--connect", f"{SOCKET_DIR_IN_CONTAINER}/{SOCKET_NAME}"]
    extra: dict[str, Any] = {}
    if warm_agent_dir is None:
        env.update(spec.harness_env())
        if limits.data_mb > 0:
            env[DATA_DIR_ENV] = DATA_DIR_IN_SANDBOX
    else:
        command = ["--warm", f"{SOCKET_DIR_IN_CONTAINER}/{SOCKET_NAME}"]
    if agent_dir is not None:
        harness = f"{SOCKET_DIR_IN_CONTAINER}/{HARNESS_NAME}"
        command = ["--agent-dir", agent_dir, *command]
        extra["entrypoint"] = ["python3", *HARNESS_PYTHON_FLAGS, harness]
    return {
        **extra,
        "image": image,
        "command": command,
        "user": f"{AGENT_UID}:{AGENT_UID}",
        "environment": env,
        "labels": labels,
        "hostname": "agent",
        "network_disabled": True,
        "stdin_open": False,
        "tty": False,
        "host_config": host_config,
    }
