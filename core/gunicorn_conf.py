"""gunicorn's settings for the web tier: ``gunicorn -c python:core.gunicorn_conf core.wsgi``.

The Dockerfile's default command, docker-compose's ``web`` service, ``prepare_dev.sh`` with
``WEB_SERVER=gunicorn`` and ``benchmarks/bench_web.py`` all start gunicorn with this module, so what is
measured is what runs. Every value comes from the environment or the ``.env`` file Django reads
(documented in ``example.env``); gunicorn's own ``GUNICORN_CMD_ARGS`` and command-line options still
override it.

- ``WEB_CONCURRENCY``: worker processes; default 2 x the CPUs this process may run on, at least 2
  (``os.sched_getaffinity``, so a container pinned to 2 CPUs counts 2 whatever the host has).
- ``GUNICORN_THREADS``: threads per worker (the ``gthread`` worker class); default 2. A thread waiting on
  PostgreSQL or Redis lets its sibling run, and idle keep-alive connections hold no thread.
- ``GUNICORN_WORKER_CLASS``: default ``gthread`` (keep-alive); ``sync`` is the other supported choice.
- ``GUNICORN_TIMEOUT`` (60 s), ``GUNICORN_KEEPALIVE`` (5 s), ``GUNICORN_MAX_REQUESTS`` (0: never recycle a
  worker; set e.g. 10000 to bound a slow leak), ``PORT`` (8000) and ``HOST`` (0.0.0.0) for the bind
  address, ``GUNICORN_ACCESS_LOG`` (1), ``GUNICORN_LOG_LEVEL`` (info).

Database connections are persistent per thread (``DATABASE_CONN_MAX_AGE``, health-checked before reuse:
``core/settings.py``), so a worker opens at most ``GUNICORN_THREADS`` connections; size PostgreSQL's
``max_connections`` for ``WEB_CONCURRENCY x GUNICORN_THREADS`` per web host plus the workers.
"""

from __future__ import annotations

import os
from pathlib import Path

from core.config import env_bool, env_choice, env_int, env_str, load_env_file

# The same settings file Django reads (``$ENV_FILE``, else ``.env`` at the repository root); the process
# environment wins over it.
load_env_file(Path(os.environ.get("ENV_FILE") or Path(__file__).resolve().parents[1] / ".env"))


def cpu_count() -> int:
    """CPUs this process may run on (its affinity mask, which containers' cpusets narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_workers(cpus: int) -> int:
    """Two workers per CPU, at least two (one can serve while the other is recycled or busy)."""
    return max(2, 2 * cpus)


worker_class = env_choice("GUNICORN_WORKER_CLASS", "gthread", ("gthread", "sync"))
workers = env_int("WEB_CONCURRENCY", default_workers(cpu_count()), minimum=1)
threads = env_int("GUNICORN_THREADS", 2, minimum=1)
timeout = env_int("GUNICORN_TIMEOUT", 60, minimum=1)
keepalive = env_int("GUNICORN_KEEPALIVE", 5, minimum=0)
max_requests = env_int("GUNICORN_MAX_REQUESTS", 0, minimum=0)
max_requests_jitter = max_requests // 10
bind = [f"{(env_str('HOST') or '').strip() or '0.0.0.0'}:{env_int('PORT', 8000, minimum=1, maximum=65535)}"]  # noqa: S104

# Behind nginx (the only thing that can reach gunicorn): trust its X-Forwarded-* headers.
forwarded_allow_ips = "*"
# Logs to stdout/stderr (docker logs, prepare_dev's web.log). The access log costs a write per request;
# GUNICORN_ACCESS_LOG=0 turns it off (nginx keeps its own).
accesslog = "-" if env_bool("GUNICORN_ACCESS_LOG", True) else None
errorlog = "-"
loglevel = env_choice("GUNICORN_LOG_LEVEL", "info", ("debug", "info", "warning", "error", "critical"))
# Import the application once in the master: workers fork with Django already set up (faster start, shared
# memory pages). Database connections are opened per worker after the fork, never inherited.
preload_app = True
# gunicorn's control socket (``gunicornc``) lives at one path per user: several servers on one machine
# (tests, benchmarks, prepare_dev) would fight over it, and nothing here uses it.
control_socket_disable = True
