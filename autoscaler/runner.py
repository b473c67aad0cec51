"""One autoscaling step (read the queue, decide, apply), and the policy and provider of the settings.

The variables are read once, by ``autoscaler.settings`` (its docstring lists them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from autoscaler.policy import Decision, QueueSnapshot, ScalingPolicy, decide
from autoscaler.providers.base import Provider
from autoscaler.settings import autoscaler_settings

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


def policy_from_env() -> ScalingPolicy:
    """The ``ScalingPolicy`` described by the AUTOSCALER_* variables."""
    conf = autoscaler_settings()
    return ScalingPolicy(
        min_workers=conf.min_workers,
        max_workers=conf.max_workers,
        jobs_per_worker=conf.jobs_per_worker,
        max_wait_s=conf.max_wait_s,
        max_step_up=conf.max_step_up,
        max_step_down=conf.max_step_down,
        min_age_before_removal_s=conf.min_age_s,
    )


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
    """The provider named by ``kind`` (default AUTOSCALER_PROVIDER), configured from the settings."""
    conf = autoscaler_settings()
    kind = (kind or conf.provider).strip().lower()
    dry = conf.dry_run if dry_run is None else dry_run
    if kind == "local":
        from autoscaler.providers.local import LocalProvider

        return LocalProvider(conf.run_dir)
    if kind == "digitalocean":
        from autoscaler.providers.digitalocean import API, DigitalOceanProvider, DropletSpec

        if not conf.do_user_data_file and not dry:
            raise ValueError("AUTOSCALER_DO_USER_DATA_FILE is required (the workers' cloud-init)")
        spec = DropletSpec(
            region=conf.do_region,
            size=conf.do_size,
            image=conf.do_image,
            tag=conf.do_tag,
            name_prefix=conf.do_tag,
            user_data=(
                Path(conf.do_user_data_file).read_text() if conf.do_user_data_file else "#cloud-config\n"
            ),
            vpc_uuid=conf.do_vpc_uuid,
            ssh_keys=list(conf.do_ssh_keys),
        )
        return DigitalOceanProvider(
            spec,
            conf.do_token,
            join_key=conf.join_key,
            dry_run=dry,
            api=conf.do_api_url or API,
            drain_hook=None if dry else celery_drain_hook,
            on_destroy=None if dry else revoke_worker_db_role,
        )
    raise ValueError(f"AUTOSCALER_PROVIDER must be local or digitalocean, got {kind!r}")
