"""A matchmaking round on a large league plans over a bounded pool, and never takes the rating lock.

The league is made "large" by lowering ``ladder_pool.FULL_LEAGUE`` (the pool's rules are the same at
10,000 competitors; ``benchmarks/bench_ladder_scale.py`` measures that size).
"""

from __future__ import annotations

import random
import threading
from datetime import timedelta

import pytest
from django.utils import timezone
from tm_factories import add_revision, play

from core.models import Duel, Rating
from tournament_manager import ladder_pool
from tournament_manager.actions import ladder_candidates, matchmake, rate_pending_duels

W1, W2 = "PLAYER_1_WIN", "PLAYER_2_WIN"


@pytest.fixture
def large(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ladder_pool, "FULL_LEAGUE", 6)
    monkeypatch.setattr(ladder_pool, "WINDOW", 4)


def _settle(env, bots, settings) -> None:
    """Every bot rated, out of placement, played a minute ago (not idle)."""
    settings.TM_PLACEMENT_MATCHES = 2
    for i in range(0, len(bots) - 1, 2):
        play(bots[i], bots[i + 1], [W1, W2, W1])
    rate_pending_duels(env.pk)
    Rating.objects.filter(environment=env).update(last_played_at=timezone.now() - timedelta(minutes=1))


def test_a_large_league_plans_over_a_bounded_pool_with_newcomers_and_idle_first(
    hidden_env, make_competitor, settings, large
):
    bots = [make_competitor() for _ in range(20)]
    _settle(hidden_env, bots, settings)
    newcomer = make_competitor()  # no rating: placement
    idle = bots[3]
    Rating.objects.filter(competitor=idle).update(last_played_at=timezone.now() - timedelta(days=2))
    renewed = bots[5]
    add_revision(renewed)  # a revision newer than its last duel: placement again
    pool = {c.id: c for c, _ in ladder_candidates(hidden_env.pk, batch=2, rng=random.Random(1))}
    assert len(pool) < 21
    assert {newcomer.pk, idle.pk, renewed.pk} <= set(pool)
    assert pool[renewed.pk].matches == 0  # its rating saw the old revision: placement
    created = matchmake(hidden_env.pk, rng=random.Random(1), batch_size=2)
    players = {r.competitor_id for d in created for r in (d.revision_1, d.revision_2)}
    assert len(created) == 2 and newcomer.pk in players and renewed.pk in players


def test_a_large_league_keeps_budgets_and_in_flight_limits(hidden_env, make_competitor, settings, large):
    bots = [make_competitor() for _ in range(12)]
    _settle(hidden_env, bots, settings)
    settings.TM_DAILY_DUELS = 1  # every bot played one ladder duel today: budgets spent
    for seed in range(5):
        assert matchmake(hidden_env.pk, rng=random.Random(seed), batch_size=3) == []
    Duel.objects.filter(kind=Duel.Kind.LADDER).update(
        finished_at=timezone.now() - timedelta(days=1, minutes=1)
    )
    settings.TM_DAILY_DUELS = 200
    created = matchmake(hidden_env.pk, rng=random.Random(1), batch_size=3)
    assert len(created) == 3
    busy = {r.competitor_id for d in created for r in (d.revision_1, d.revision_2)}
    pool = {c.id: c for c, _ in ladder_candidates(hidden_env.pk, batch=3, rng=random.Random(2))}
    assert not busy & set(pool)  # in flight (TM_MAX_IN_FLIGHT 1): not even read
    again = matchmake(hidden_env.pk, rng=random.Random(2), batch_size=3)
    assert not busy & {r.competitor_id for d in again for r in (d.revision_1, d.revision_2)}


@pytest.mark.django_db(transaction=True)
def test_matchmaking_never_waits_for_the_rating_lock(tm_settings, make_competitor, hidden_env):
    """A rating round holds the environment's row lock; a matchmaking round meanwhile plans and commits
    (it would fail on the lock timeout if it took that lock)."""
    import psycopg
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    for _ in range(4):
        make_competitor()
    params = connection.get_connection_params()
    locked, release = threading.Event(), threading.Event()

    def rating_round() -> None:
        with psycopg.connect(**{k: v for k, v in params.items() if k != "cursor_factory"}) as other:
            other.execute("SELECT id FROM core_environment WHERE id = %s FOR NO KEY UPDATE", [hidden_env.pk])
            locked.set()
            release.wait(30)

    holder = threading.Thread(target=rating_round)
    holder.start()
    try:
        assert locked.wait(30)
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '2s'")
        created = matchmake(hidden_env.pk, rng=random.Random(1), batch_size=2)
        assert len(created) == 2
    finally:
        release.set()
        holder.join()
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
