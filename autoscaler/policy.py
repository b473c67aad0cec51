"""The scaling decision: a pure function of the queue, the current workers and the policy."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

WorkerState = Literal["starting", "running", "draining"]


@dataclass(frozen=True)
class QueueSnapshot:
    """What the database says about pending work (builds + smoke tests + duels)."""

    queued: int
    running: int
    oldest_wait_s: float | None = None
    #: ``worker`` values ("host:pid") of jobs RUNNING under a live lease.
    busy_claimers: frozenset[str] = frozenset()


@dataclass(frozen=True)
class WorkerView:
    """One worker (a process or a machine) as a provider sees it."""

    name: str
    state: WorkerState
    busy: bool
    age_s: float


@dataclass(frozen=True)
class ScalingPolicy:
    """Bounds and pacing of the pool."""

    min_workers: int = 0
    max_workers: int = 4
    #: Jobs one worker runs at once (its Celery concurrency).
    jobs_per_worker: int = 2
    #: A queued job waiting longer than this means the pool is too small, whatever the arithmetic says.
    max_wait_s: float = 60.0
    #: Workers added per decision at most (boots are slow; the next tick sees them as starting).
    max_step_up: int = 2
    #: Workers drained per decision at most (scale down gently).
    max_step_down: int = 1
    #: Never drain a worker younger than this (a droplet is billed anyway; avoids flapping).
    min_age_before_removal_s: float = 300.0

    def __post_init__(self) -> None:
        if not 0 <= self.min_workers <= self.max_workers:
            raise ValueError(
                f"need 0 <= min_workers <= max_workers, got {self.min_workers}..{self.max_workers}"
            )
        if self.jobs_per_worker < 1 or self.max_step_up < 1 or self.max_step_down < 1:
            raise ValueError("jobs_per_worker, max_step_up and max_step_down must be >= 1")


@dataclass(frozen=True)
class Decision:
    """What to do now: start ``start`` workers, drain some, destroy drained idle ones."""

    desired: int
    start: int = 0
    drain: tuple[str, ...] = ()
    destroy: tuple[str, ...] = ()
    reason: str = ""

    @property
    def is_noop(self) -> bool:
        """True when nothing changes."""
        return not (self.start or self.drain or self.destroy)


def desired_workers(queue: QueueSnapshot, active: int, policy: ScalingPolicy) -> tuple[int, str]:
    """How many active workers the queue calls for, clamped to the policy's bounds, and why."""
    demand = queue.queued + queue.running
    desired = math.ceil(demand / policy.jobs_per_worker)
    reason = f"{demand} job(s) at {policy.jobs_per_worker} per worker"
    waiting_too_long = queue.queued > 0 and (queue.oldest_wait_s or 0.0) > policy.max_wait_s
    if waiting_too_long and desired <= active:
        desired = active + 1
        reason = f"oldest job waited {queue.oldest_wait_s:.0f}s > {policy.max_wait_s:.0f}s"
    clamped = min(max(desired, policy.min_workers), policy.max_workers)
    if clamped != desired:
        reason += f"; clamped to [{policy.min_workers}, {policy.max_workers}]"
    return clamped, reason


def decide(queue: QueueSnapshot, workers: list[WorkerView], policy: ScalingPolicy) -> Decision:
    """The scaling step for this tick.

    - Drained workers that are no longer busy are destroyed.
    - Too few active (starting + running) workers: start up to ``max_step_up`` more.
    - Too many: drain up to ``max_step_down`` idle, running workers old enough (oldest first); a busy worker
      is never drained, so work in progress is never cut short by scaling.
    """
    active = [w for w in workers if w.state in ("starting", "running")]
    destroy = tuple(sorted(w.name for w in workers if w.state == "draining" and not w.busy))
    desired, reason = desired_workers(queue, len(active), policy)

    if desired > len(active):
        start = min(desired - len(active), policy.max_step_up)
        return Decision(desired, start=start, destroy=destroy, reason=f"scale up: {reason}")
    if desired < len(active):
        removable = sorted(
            (
                w
                for w in active
                if w.state == "running" and not w.busy and w.age_s >= policy.min_age_before_removal_s
            ),
            key=lambda w: (-w.age_s, w.name),
        )
        drain = tuple(w.name for w in removable[: min(len(active) - desired, policy.max_step_down)])
        why = (
            f"scale down: {reason}"
            if drain
            else f"would scale down ({reason}) but no idle worker is old enough"
        )
        return Decision(desired, drain=drain, destroy=destroy, reason=why)
    return Decision(desired, destroy=destroy, reason=f"steady: {reason}")
