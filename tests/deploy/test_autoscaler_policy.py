"""autoscaler.policy.decide: table-driven, pure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.policy import Decision, QueueSnapshot, ScalingPolicy, WorkerView, decide
from autoscaler.queue import snapshot_from_counts

POLICY = ScalingPolicy(
    min_workers=1,
    max_workers=5,
    jobs_per_worker=2,
    max_wait_s=60,
    max_step_up=2,
    min_age_before_removal_s=300,
)
OLD = 3600.0


def running(name: str, busy: bool = False, age: float = OLD) -> WorkerView:
    return WorkerView(name, "running", busy=busy, age_s=age)


def starting(name: str) -> WorkerView:
    return WorkerView(name, "starting", busy=False, age_s=10)


def draining(name: str, busy: bool = False) -> WorkerView:
    return WorkerView(name, "draining", busy=busy, age_s=OLD)


Q = QueueSnapshot
r, st, dr = running, starting, draining
CASES = [
    # (why, queue, workers, expected start, drain, destroy, desired)
    ("empty pool, empty queue: the floor", Q(0, 0), [], 1, (), (), 1),
    ("demand fits the pool", Q(2, 2), [r("a"), r("b", busy=True)], 0, (), (), 2),
    ("demand rounds up", Q(3, 0), [r("a")], 1, (), (), 2),
    ("a burst is added in steps", Q(20, 0), [r("a")], 2, (), (), 5),
    ("never above the ceiling", Q(100, 10), [r(n) for n in "abcde"], 0, (), (), 5),
    ("starting workers count already", Q(6, 0), [r("a"), st("b"), st("c")], 0, (), (), 3),
    ("a long wait forces one more", Q(1, 2, oldest_wait_s=120), [r("a", True), r("b", True)], 1, (), (), 3),
    ("a short wait does not", Q(1, 2, oldest_wait_s=30), [r("a", True), r("b", True)], 0, (), (), 2),
    ("idle surplus drains one per step, oldest first",
     Q(0, 0), [r("a", age=400), r("b", age=5000), r("c", age=4000)], 0, ("b",), (), 1),
    ("busy workers are never drained", Q(0, 1), [r("a", busy=True), r("b", busy=True)], 0, (), (), 1),
    ("young workers are kept", Q(0, 0), [r("a", age=60), r("b", age=100)], 0, (), (), 1),
    ("drained idle workers are destroyed", Q(0, 0), [r("a"), dr("x")], 0, (), ("x",), 1),
    ("drained busy workers finish first", Q(0, 0), [r("a"), dr("x", busy=True)], 0, (), (), 1),
    ("draining ones do not count as capacity", Q(4, 0), [r("a"), dr("x")], 1, (), ("x",), 2),
]  # fmt: skip


@pytest.mark.parametrize(("why", "queue", "workers", "start", "drain", "destroy", "desired"), CASES)
def test_decide(
    why: str,
    queue: QueueSnapshot,
    workers: list[WorkerView],
    start: int,
    drain: tuple[str, ...],
    destroy: tuple[str, ...],
    desired: int,
) -> None:
    decision = decide(queue, workers, POLICY)
    assert (decision.start, decision.drain, decision.destroy, decision.desired) == (
        start,
        drain,
        destroy,
        desired,
    ), (
        why,
        decision.reason,
    )


def test_a_floor_of_zero_lets_the_pool_empty() -> None:
    policy = ScalingPolicy(min_workers=0, max_workers=3, min_age_before_removal_s=0)
    assert decide(QueueSnapshot(0, 0), [running("a")], policy).drain == ("a",)
    assert decide(QueueSnapshot(0, 0), [], policy) == Decision(
        0, reason=decide(QueueSnapshot(0, 0), [], policy).reason
    )


def test_every_decision_says_why() -> None:
    for _, queue, workers, *_ in CASES:
        assert decide(queue, workers, POLICY).reason


@pytest.mark.parametrize(
    "kwargs",
    [{"min_workers": 3, "max_workers": 2}, {"min_workers": -1}, {"jobs_per_worker": 0}, {"max_step_up": 0}],
)
def test_impossible_policies_are_refused(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        ScalingPolicy(**kwargs)


NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("queued", "running_jobs", "oldest", "wait"),
    [
        (0, 0, None, None),
        (3, 1, NOW - timedelta(seconds=90), 90.0),
        (0, 2, NOW - timedelta(seconds=90), None),  # nothing queued: no wait, whatever the timestamp
        (1, 0, NOW + timedelta(seconds=5), 0.0),  # clock skew never gives a negative wait
    ],
)
def test_snapshot_from_counts(
    queued: int, running_jobs: int, oldest: datetime | None, wait: float | None
) -> None:
    snapshot = snapshot_from_counts(queued, running_jobs, oldest, NOW, ["h:1", "h:1", "g:2"])
    assert (snapshot.queued, snapshot.running, snapshot.oldest_wait_s) == (queued, running_jobs, wait)
    assert snapshot.busy_claimers == {"h:1", "g:2"}


def test_negative_counts_are_refused() -> None:
    with pytest.raises(ValueError):
        snapshot_from_counts(-1, 0, None, NOW)
