"""The Celery periodic task ``autoscaler.step`` (an alternative to the ``python -m autoscaler run`` loop).

Enabled by adding ``autoscaler`` to the Celery app's autodiscovered packages and a beat entry, e.g.
``{"autoscaler-step": {"task": "autoscaler.step", "schedule": 30.0}}``. The provider is kept per process so
the local provider remembers the workers it started.
"""

from __future__ import annotations

from functools import cache

from celery import shared_task

from autoscaler.providers.base import Provider
from autoscaler.queue import read_queue_snapshot
from autoscaler.runner import policy_from_env, provider_from_env, step


@cache
def _provider() -> Provider:
    return provider_from_env()


@shared_task(name="autoscaler.step", ignore_result=True)
def autoscale_step() -> dict[str, object]:
    """One autoscaling step; returns the decision (for logs)."""
    decision = step(_provider(), policy_from_env(), read_queue_snapshot)
    return {"desired": decision.desired, "start": decision.start, "drain": list(decision.drain),
            "destroy": list(decision.destroy), "reason": decision.reason}  # fmt: skip
