"""One autoscaling step (read the queue, decide, apply) and the configuration read from the environment.

| variable | default | meaning |
|---|---|---|
| AUTOSCALER_PROVIDER | local | ``local`` (worker processes here) or ``digitalocean`` (droplets) |
| AUTOSCALER_MIN_WORKERS / AUTOSCALER_MAX_WORKERS | 0 / 4 | floor and ceiling of the autoscaled pool |
| AUTOSCALER_JOBS_PER_WORKER | $WORKER_CONCURRENCY or 2 | jobs one worker runs at once |
| AUTOSCALER_MAX_WAIT_S | 60 | a queued job older than this forces one more worker |
| AUTOSCALER_MAX_STEP_UP / AUTOSCALER_MAX_STEP_DOWN | 2 / 1 | workers added / drained per step |
| AUTOSCALER_MIN_AGE_S | 300 | never drain a worker younger than this |
| AUTOSCALER_INTERVAL_S | 30 | seconds between steps (``python -m autoscaler run``) |
| AUTOSCALER_DRY_RUN | 0 | 1: print the provider calls instead of making them |
| AUTOSCALER_RUN_DIR | $DATA_DIR/run/autoscaler | local provider: pid files and logs |
| AUTOSCALER_DO_TOKEN (or _FILE) | | DigitalOcean API token |
| AUTOSCALER_DO_API_URL | https://api.digitalocean.com/v2 | API base address (tests: a local server) |
| AUTOSCALER_DO_REGION, _SIZE, _IMAGE, _VPC_UUID, _TAG, _SSH_KEYS | | droplet spec (terraform writes them) |
| AUTOSCALER_DO_USER_DATA_FILE | | workers' cloud-init template (terraform: $DATA_DIR/autoscaler/) |
| AUTOSCALER_JOIN_KEY (or _FILE) | | signs each droplet's one-time join ticket (``autoscaler.join``) |
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from autoscaler.policy import Decision, QueueSnapshot, ScalingPolicy, decide
from autoscaler.providers.base import Provider

log = logging.getLogger("autoscaler")


def step(provider: Provider, policy: ScalingPolicy, read_queue: Callable[[], QueueSnapshot]) -> Decision:
    """Read the queue and the pool, decide, and carry the decision out. Returns the decision."""
    queue = read_queue()
    workers = provider.list_workers(queue.busy_claimers)
    decision = decide(queue, workers, policy)
    for name in decision.destroy:
        provider.destroy(name)
    for name in decision.drain:
        provider.drain(name)
    started = provider.start(decision.start) if decision.start else []
    level = logging.DEBUG if decision.is_noop else logging.INFO
    log.log(
        level,
        "queued=%d running=%d oldest_wait_s=%s workers=%d desired=%d started=%s drained=%s destroyed=%s (%s)",
        queue.queued, queue.running, queue.oldest_wait_s, len(workers), decision.desired,
        started, list(decision.drain), list(decision.destroy), decision.reason,
    )  # fmt: skip
    return decision


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    try:
        return int(raw) if raw else default
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None


def _float(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    try:
        return float(raw) if raw else default
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None


def _bool(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def policy_from_env() -> ScalingPolicy:
    """The ``ScalingPolicy`` described by the AUTOSCALER_* variables."""
    return ScalingPolicy(
        min_workers=_int("AUTOSCALER_MIN_WORKERS", 0),
        max_workers=_int("AUTOSCALER_MAX_WORKERS", 4),
        jobs_per_worker=_int("AUTOSCALER_JOBS_PER_WORKER", _int("WORKER_CONCURRENCY", 2)),
        max_wait_s=_float("AUTOSCALER_MAX_WAIT_S", 60.0),
        max_step_up=_int("AUTOSCALER_MAX_STEP_UP", 2),
        max_step_down=_int("AUTOSCALER_MAX_STEP_DOWN", 1),
        min_age_before_removal_s=_float("AUTOSCALER_MIN_AGE_S", 300.0),
    )


def _secret(name: str) -> str:
    file_name = os.environ.get(f"{name}_FILE", "").strip()
    if file_name:
        return Path(file_name).read_text().strip()
    return os.environ.get(name, "").strip()


def celery_drain_hook(name: str) -> None:
    """Ask the Celery worker ``worker@<name>`` to stop consuming the default queue."""
    from django.conf import settings

    from core.celery import app

    app.control.cancel_consumer(settings.CELERY_TASK_DEFAULT_QUEUE, destination=[f"worker@{name}"])


def revoke_worker_db_role(name: str) -> None:
    """Drop the PostgreSQL role the join service gave worker ``name`` (its droplet is gone).

    Logged, not raised: the droplet is already deleted, and a role left behind is reported loudly.
    """
    from django.db import connection

    from autoscaler.join import revoke_sql, worker_role

    if connection.vendor != "postgresql":
        return
    try:
        with connection.cursor() as cursor:
            for statement in revoke_sql(worker_role(name)).strip().splitlines():
                cursor.execute(statement)
    except Exception:
        log.exception("could not drop the database role of destroyed worker %s: drop it by hand", name)
    else:
        log.info("dropped the database role of destroyed worker %s", name)


def provider_from_env(kind: str | None = None, *, dry_run: bool | None = None) -> Provider:
    """The provider named by ``kind`` (default AUTOSCALER_PROVIDER), configured from the environment."""
    kind = (kind or os.environ.get("AUTOSCALER_PROVIDER", "local")).strip().lower()
    dry = _bool("AUTOSCALER_DRY_RUN") if dry_run is None else dry_run
    if kind == "local":
        from autoscaler.providers.local import LocalProvider

        data_dir = Path(os.environ.get("DATA_DIR", "data"))
        run_dir = Path(os.environ.get("AUTOSCALER_RUN_DIR", "") or data_dir / "run" / "autoscaler")
        return LocalProvider(run_dir)
    if kind == "digitalocean":
        from autoscaler.providers.digitalocean import API, DigitalOceanProvider, DropletSpec

        user_data_file = os.environ.get("AUTOSCALER_DO_USER_DATA_FILE", "").strip()
        if not user_data_file and not dry:
            raise ValueError("AUTOSCALER_DO_USER_DATA_FILE is required (the workers' cloud-init)")
        tag = os.environ.get("AUTOSCALER_DO_TAG", "rl-arena-worker-auto").strip()
        spec = DropletSpec(
            region=os.environ.get("AUTOSCALER_DO_REGION", "fra1"),
            size=os.environ.get("AUTOSCALER_DO_SIZE", "s-2vcpu-4gb"),
            image=os.environ.get("AUTOSCALER_DO_IMAGE", "ubuntu-24-04-x64"),
            tag=tag,
            name_prefix=tag,
            user_data=Path(user_data_file).read_text() if user_data_file else "#cloud-config\n",
            vpc_uuid=os.environ.get("AUTOSCALER_DO_VPC_UUID", ""),
            ssh_keys=[k for k in os.environ.get("AUTOSCALER_DO_SSH_KEYS", "").split(",") if k.strip()],
        )
        return DigitalOceanProvider(
            spec,
            _secret("AUTOSCALER_DO_TOKEN"),
            join_key=_secret("AUTOSCALER_JOIN_KEY"),
            dry_run=dry,
            api=os.environ.get("AUTOSCALER_DO_API_URL", "").strip() or API,
            drain_hook=None if dry else celery_drain_hook,
            on_destroy=None if dry else revoke_worker_db_role,
        )
    raise ValueError(f"AUTOSCALER_PROVIDER must be local or digitalocean, got {kind!r}")
