"""core/gunicorn_conf.py: the worker layout comes from the CPU count unless the environment says otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from deploy_helpers import REPO

PROBE = (
    "import json, os, core.gunicorn_conf as c; "
    "print(json.dumps([c.workers, c.threads, c.worker_class, c.bind, len(os.sched_getaffinity(0))]))"
)


def _conf(*prefix: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The module's values in a fresh interpreter (``prefix``: e.g. taskset), no .env file."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("GUNICORN_", "WEB_", "PORT", "HOST"))}
    return subprocess.run(
        [*prefix, sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=60,
        env={**clean, "ENV_FILE": "/nonexistent/.env", **env},
    )  # fmt: skip


def test_workers_follow_the_cpus_this_process_may_use() -> None:
    done = _conf()
    assert done.returncode == 0, done.stderr
    workers, threads, kind, bind, cpus = json.loads(done.stdout)
    assert (workers, threads, kind, bind) == (max(2, 2 * cpus), 2, "gthread", ["0.0.0.0:8000"])
    pinned = _conf("taskset", "-c", "0")
    assert pinned.returncode == 0, pinned.stderr
    assert json.loads(pinned.stdout)[0] == 2  # one CPU: still two workers


def test_the_environment_overrides_the_layout_and_bad_values_fail_loudly() -> None:
    done = _conf(WEB_CONCURRENCY="3", GUNICORN_THREADS="4", GUNICORN_WORKER_CLASS="sync", PORT="9001")
    assert json.loads(done.stdout)[:4] == [3, 4, "sync", ["0.0.0.0:9001"]]
    bad = _conf(GUNICORN_WORKER_CLASS="eventlet")
    assert bad.returncode != 0 and "GUNICORN_WORKER_CLASS" in bad.stderr
