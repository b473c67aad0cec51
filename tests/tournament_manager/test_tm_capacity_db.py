"""Scheduling from capacity: the ladder keeps the live workers' slots busy, shares them between games,
and plans again when duels are rated, not only on the timer."""

from __future__ import annotations

import random
from datetime import timedelta

from django.db.models.functions import Now
from django.utils import timezone
from tm_factories import play

from core.models import Duel, Environment, WorkerStatus
from tournament_manager import tasks
from tournament_manager.actions import ladder_queue_target, matchmake

W1 = "PLAYER_1_WIN"


def worker(name: str, slots: int, queues: str = "arena", **state) -> WorkerStatus:
    """A worker's row as its monitor writes it (seen now, healthy, running), with ``state`` overrides."""
    values = {"host": "h", "queues": queues, "healthy": True, "stopped": False, "slots": slots}
    values.update({"last_seen": Now(), "changed_at": Now(), **state})
    return WorkerStatus.objects.create(name=name, **values)


def in_flight(env) -> int:
    ladder = Duel.objects.filter(environment=env, kind=Duel.Kind.LADDER)
    return ladder.filter(state__in=["QUEUED", "RUNNING"]).count()


def test_the_ladder_follows_the_slots_of_the_healthy_workers(hidden_env, make_competitor, settings):
    settings.TM_LADDER_QUEUE_TARGET = None  # the default: follow the capacity
    settings.TM_LADDER_SLOT_FACTOR = 2.0
    settings.TM_MAX_IN_FLIGHT = 1
    for _ in range(40):
        make_competitor()
    assert ladder_queue_target() == 0  # no worker: nothing to keep busy
    assert matchmake(hidden_env.pk, rng=random.Random(1)) == []
    worker("w1@a", 3)
    worker("w2@b", 2, queues="arena,publisher")
    worker("sick@c", 10, healthy=False, problem="the engine does not answer")
    worker("gone@d", 10, stopped=True)
    worker("silent@e", 10, last_seen=timezone.now() - timedelta(hours=1))
    worker("live@f", 10, queues="live")  # serves live games, not duels
    assert ladder_queue_target() == 10  # 2 x (3 + 2)
    assert len(matchmake(hidden_env.pk, rng=random.Random(1))) == 10
    worker("w3@g", 5)  # the fleet grows: the ladder follows at once
    assert len(matchmake(hidden_env.pk, rng=random.Random(2))) == 10
    assert in_flight(hidden_env) == 20
    WorkerStatus.objects.filter(name__in=["w1@a", "w3@g"]).update(healthy=False)
    assert matchmake(hidden_env.pk, rng=random.Random(3)) == []  # shrinks: nothing new until duels end
    assert ladder_queue_target() == 4


def test_games_share_the_slots_equally(hidden_env, make_competitor, settings):
    settings.TM_LADDER_QUEUE_TARGET = None
    settings.TM_LADDER_SLOT_FACTOR = 2.0
    other = Environment.objects.create(
        slug="hidden-skill-2",
        name="Hidden skill 2",
        matches_per_duel=4,
        smoke_test_matches=2,
        move_time_limit=1.0,
        init_time_limit=5.0,
        memory_limit_mb=256,
        cpu_limit=0.5,
    )
    for env in (hidden_env, other):
        for _ in range(20):
            make_competitor(env=env)
    worker("w1@a", 5)
    assert ladder_queue_target() == 5  # 2 x 5 slots for two games
    for seed, env in enumerate((hidden_env, other)):
        assert len(matchmake(env.pk, rng=random.Random(seed))) == 5


def test_a_rated_duel_plans_the_next_one_at_once(hidden_env, make_competitor, settings):
    settings.TM_LADDER_QUEUE_TARGET = None
    settings.TM_MAX_IN_FLIGHT = 1
    a, b = make_competitor(), make_competitor()
    worker("w1@a", 2)
    play(a, b, [W1])  # a finished ladder duel, not rated yet; nothing in flight
    assert in_flight(hidden_env) == 0
    assert tasks.rate_environment(hidden_env.pk) == 1
    assert in_flight(hidden_env) == 1  # planned by the rating, without waiting for the matchmaking timer


def test_a_full_ladder_is_seen_without_the_round_lock(hidden_env, make_competitor, settings):
    """After a rating round the ladder is usually at its target: matchmaking reads the count and the
    target (one query for the workers' slots) and returns, with no transaction and no round lock."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    settings.TM_LADDER_QUEUE_TARGET = None
    settings.TM_LADDER_SLOT_FACTOR = 2.0
    for _ in range(10):
        make_competitor()
    worker("w1@a", 1)
    assert len(matchmake(hidden_env.pk, rng=random.Random(1))) == 2
    with CaptureQueriesContext(connection) as queries:
        assert matchmake(hidden_env.pk, rng=random.Random(2)) == []
    sql = [q["sql"] for q in queries.captured_queries]
    assert not any(
        "advisory" in s or 'core_environment"."is_active", "core_environment"."matches' in s for s in sql
    ), sql
    assert sum("core_workerstatus" in s for s in sql) == 1, sql
    Duel.objects.filter(environment=hidden_env).update(state=Duel.State.FINISHED)
    assert len(matchmake(hidden_env.pk, rng=random.Random(3))) == 2  # room again: planned under the lock
