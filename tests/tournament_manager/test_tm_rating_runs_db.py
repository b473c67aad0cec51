"""Rating runs: triggers that arrive during a run are folded into it, rounds batch what arrived, and every
duel is still rated exactly once (the database decides; the cache only saves work)."""

from __future__ import annotations

import queue
import threading
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from tm_factories import play, record

from core import rating_outbox
from core.actions import schedule_duel
from core.models import Duel, Rating, RatingHistory
from tournament_manager.actions import rate_pending_duels, recompute_ratings

W1, W2, D = "PLAYER_1_WIN", "PLAYER_2_WIN", "DRAW"


class Scheduled:
    """A ``schedule`` callback that keeps what the run asked for, instead of sending it to Celery."""

    def __init__(self) -> None:
        self.calls: list[tuple[str | None, float]] = []

    def __call__(self, token: str | None, countdown: float) -> None:
        self.calls.append((token, countdown))


def snapshot(env: Any) -> dict:
    fields = ("competitor_id", "mu", "sigma", "matches", "wins", "draws", "losses", "errors", "duels")
    return {r[0]: r[1:] for r in Rating.objects.filter(environment=env).values_list(*fields)}


def rate_round(env: Any) -> Any:
    return lambda limit: rate_pending_duels(env.pk, limit=limit)


def running_token(env: Any) -> Any:
    return cache.get(f"tournament_manager:rating-run:{env.pk}:running")


def test_a_trigger_during_a_run_leaves_a_mark_and_the_run_comes_back_for_it(hidden_env, make_competitor):
    a, b = make_competitor(), make_competitor()
    first = play(a, b, [W1, W1])
    late = []
    inner = Scheduled()

    def round_with_a_result_arriving(limit: int) -> int:
        rated = rate_pending_duels(hidden_env.pk, limit=limit)
        late.append(play(a, b, [W2]))  # committed during the run, then its trigger arrives
        assert rating_outbox.run(hidden_env.pk, rate_round(hidden_env), inner) == 0  # folded: a mark only
        return rated

    outer = Scheduled()
    assert rating_outbox.run(hidden_env.pk, round_with_a_result_arriving, outer) == 1
    assert inner.calls == []
    [(token, countdown)] = outer.calls  # the runner comes back in a moment, keeping its election
    assert token == running_token(hidden_env) and countdown == rating_outbox.SETTLE_S
    assert Duel.objects.get(pk=first.pk).rated and not Duel.objects.get(pk=late[0].pk).rated

    again = Scheduled()
    assert rating_outbox.run(hidden_env.pk, rate_round(hidden_env), again, token) == 1
    assert again.calls == [] and running_token(hidden_env) is None  # nothing more came: released
    assert Duel.objects.get(pk=late[0].pk).rated

    play(a, b, [D])  # the next trigger after a quiet spell is rated at once
    assert rating_outbox.run(hidden_env.pk, rate_round(hidden_env), Scheduled()) == 1


def test_a_full_round_continues_at_once(hidden_env, make_competitor, monkeypatch):
    monkeypatch.setattr(rating_outbox, "ROUND_SIZE", 2)
    a, b = make_competitor(), make_competitor()
    duels = [play(a, b, [W1]) for _ in range(3)]
    scheduled = Scheduled()
    assert rating_outbox.run(hidden_env.pk, rate_round(hidden_env), scheduled) == 2
    [(token, countdown)] = scheduled.calls
    assert countdown == 0.0
    assert [d.pk for d in Duel.objects.filter(rated=True).order_by("pk")] == [d.pk for d in duels[:2]]
    assert rating_outbox.run(hidden_env.pk, rate_round(hidden_env), Scheduled(), token) == 1


def test_a_continuation_whose_election_was_taken_does_nothing(hidden_env, make_competitor):
    a, b = make_competitor(), make_competitor()
    play(a, b, [W1])
    cache.set(f"tournament_manager:rating-run:{hidden_env.pk}:running", "another-run", timeout=30)

    def must_not_run(limit: int) -> int:
        raise AssertionError("a stale continuation rated")

    assert rating_outbox.run(hidden_env.pk, must_not_run, Scheduled(), "an-old-token") == 0
    assert running_token(hidden_env) == "another-run"


def test_a_continuation_whose_election_expired_elects_itself(hidden_env, make_competitor):
    """Also what happens with a per-process cache, where the continuation runs in another process."""
    a, b = make_competitor(), make_competitor()
    play(a, b, [W1])
    assert rating_outbox.run(hidden_env.pk, rate_round(hidden_env), Scheduled(), "its-token") == 1
    assert running_token(hidden_env) is None


def test_a_failing_round_releases_the_election(hidden_env, make_competitor):
    def broken(limit: int) -> int:
        raise RuntimeError("database went away")

    with pytest.raises(RuntimeError):
        rating_outbox.run(hidden_env.pk, broken, Scheduled())
    assert running_token(hidden_env) is None


@pytest.mark.django_db(transaction=True)
def test_triggers_from_many_threads_rate_every_duel_exactly_once(tm_settings, hidden_env, make_competitor):
    """Six threads record duels and trigger after each commit, as workers do; continuations run on a
    dispatcher thread, as Celery would. Every duel ends rated once, in an order a replay reproduces."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    bots = [make_competitor() for _ in range(6)]
    duels = [
        schedule_duel(bots[k % 6].current_revision_id, bots[(k + 1 + k // 6 % 5) % 6].current_revision_id).pk
        for k in range(36)
    ]
    continuations: queue.Queue[str | None] = queue.Queue()
    errors: list[BaseException] = []
    runs: list[int] = []

    def schedule(token: str | None, countdown: float) -> None:
        continuations.put(token)

    def trigger(token: str | None = None) -> None:
        runs.append(rating_outbox.run(hidden_env.pk, rate_round(hidden_env), schedule, token))

    def worker(chunk: list[int]) -> None:
        try:
            for k, duel_id in enumerate(chunk):
                assert record(duel_id, [[W1, W2], [D], [W2, W2, W1]][k % 3])
                trigger()
        except BaseException as exc:  # reported in the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(duels[t::6],)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    while True:  # the dispatcher: run the continuations until none is left
        try:
            trigger(continuations.get(timeout=1))
        except queue.Empty:
            break
    connection.close()
    assert not errors, errors
    assert not Duel.objects.filter(rated=False).exists()
    assert sum(runs) == len(duels)  # each duel counted by exactly one round
    assert RatingHistory.objects.count() == 2 * len(duels)
    ratings = snapshot(hidden_env)
    recompute_ratings(hidden_env.pk)  # a replay in the order the rounds rated reproduces the numbers
    assert snapshot(hidden_env) == ratings
