"""Ladder matchmaking, tournament editions, tasks and commands against the database."""

from __future__ import annotations

import random
from io import StringIO

import pytest
from django.core.management import call_command
from tm_factories import add_revision, play

from core.models import Competitor, Duel, Rating, Tournament
from tournament_manager import tasks
from tournament_manager.actions import (
    check_editions,
    ladder_candidates,
    matchmake,
    rate_pending_duels,
    start_tournament,
    update_tournament_progress,
)

W1, W2, D = "PLAYER_1_WIN", "PLAYER_2_WIN", "DRAW"


def ladder_duels(env):
    return list(Duel.objects.filter(environment=env, kind=Duel.Kind.LADDER))


def test_matchmaking_schedules_disjoint_ladder_duels(hidden_env, make_competitor):
    bots = [make_competitor() for _ in range(7)]
    created = matchmake(hidden_env.pk, rng=random.Random(1), batch_size=10)
    assert len(created) == 3
    players = [r.competitor_id for d in created for r in (d.revision_1, d.revision_2)]
    assert len(players) == len(set(players)) and set(players) <= {b.pk for b in bots}
    assert all(d.kind == Duel.Kind.LADDER and d.state == Duel.State.QUEUED for d in created)


def test_matchmaking_tops_up_to_the_queue_target(hidden_env, make_competitor, settings):
    settings.TM_LADDER_QUEUE_TARGET = 2
    settings.TM_MAX_IN_FLIGHT = 1
    for _ in range(10):
        make_competitor()
    assert len(matchmake(hidden_env.pk, rng=random.Random(1))) == 2
    assert matchmake(hidden_env.pk, rng=random.Random(2)) == []
    assert len(ladder_duels(hidden_env)) == 2


def test_competitors_with_a_duel_in_flight_wait(hidden_env, make_competitor, settings):
    settings.TM_MAX_IN_FLIGHT = 1
    make_competitor(), make_competitor(), make_competitor()
    first = matchmake(hidden_env.pk, rng=random.Random(1), batch_size=5)
    assert len(first) == 1
    assert matchmake(hidden_env.pk, rng=random.Random(1), batch_size=5) == []


def test_paused_competitors_and_ineligible_revisions_are_not_matched(hidden_env, make_competitor):
    a, b, c = make_competitor(), make_competitor(), make_competitor()
    Competitor.objects.filter(pk=a.pk).update(status=Competitor.Status.PAUSED)
    c.current_revision.state = "REJECTED"
    c.current_revision.save(update_fields=["state"])
    assert [cand.id for cand, _ in ladder_candidates(hidden_env.pk)] == [b.pk]
    assert matchmake(hidden_env.pk, batch_size=5) == []


def test_a_new_revision_enters_placement_with_its_uncertainty_reset(hidden_env, make_competitor):
    a, b = make_competitor(), make_competitor()
    for _ in range(3):
        play(a, b, [W1, W1, W1, W1])
    rate_pending_duels(hidden_env.pk)
    add_revision(a)
    cand = {c.id: c for c, _ in ladder_candidates(hidden_env.pk)}
    assert cand[a.pk].matches == 0 and cand[a.pk].skill.sigma == pytest.approx(25 / 3)
    assert cand[a.pk].skill.mu == Rating.objects.get(competitor=a).mu
    assert cand[b.pk].matches == 12


def test_a_tournament_pairs_every_revision_once_and_ranks_them(hidden_env, make_competitor):
    bots = [make_competitor(f"bot{k}") for k in range(4)]
    tournament = start_tournament(hidden_env.pk)
    assert tournament.edition == 1 and tournament.duels_total == 6
    duels = list(Duel.objects.filter(tournament=tournament).select_related("revision_1", "revision_2"))
    pairs = {frozenset((d.revision_1.competitor_id, d.revision_2.competitor_id)) for d in duels}
    assert len(pairs) == 6 and all(d.kind == Duel.Kind.TOURNAMENT for d in duels)

    from tm_factories import record

    strength = {b.pk: k for k, b in enumerate(bots)}  # bot3 beats everyone, bot0 loses to everyone
    for d in duels:
        p1, p2 = strength[d.revision_1.competitor_id], strength[d.revision_2.competitor_id]
        assert record(d.pk, [W1, W1] if p1 > p2 else [W2, W2])
    rate_pending_duels(hidden_env.pk)
    tournament.refresh_from_db()
    assert tournament.state == Tournament.State.FINISHED and tournament.duels_finished == 6
    table = {p.revision.competitor.name: (p.rank, p.points) for p in tournament.participants.all()}
    assert table == {"bot3": (1, 6), "bot2": (2, 4), "bot1": (3, 2), "bot0": (4, 0)}


def test_a_drawn_edition_shares_ranks(hidden_env, make_competitor):
    make_competitor("a"), make_competitor("b")
    tournament = start_tournament(hidden_env.pk)
    from tm_factories import record

    assert record(Duel.objects.get(tournament=tournament).pk, [W1, W2])
    update_tournament_progress(tournament.pk)
    assert sorted(tournament.participants.values_list("rank", "points")) == [(1, 1), (1, 1)]


def test_an_edition_needs_two_revisions(hidden_env, make_competitor):
    make_competitor()
    assert start_tournament(hidden_env.pk) is None
    assert not Tournament.objects.exists()


def test_a_new_edition_starts_only_when_the_eligible_set_changed(hidden_env, make_competitor):
    a, _ = make_competitor(), make_competitor()
    first = check_editions(hidden_env.pk)
    assert first is not None and first.edition == 1
    assert check_editions(hidden_env.pk) is None  # still running
    Duel.objects.filter(tournament=first).update(state=Duel.State.FAILED)
    update_tournament_progress(first.pk)
    assert check_editions(hidden_env.pk) is None  # same revisions
    add_revision(a)
    second = check_editions(hidden_env.pk)
    assert second is not None and second.edition == 2


def test_the_tasks_run_the_actions(hidden_env, make_competitor, settings):
    settings.TM_LADDER_QUEUE_TARGET = 4
    a, b = make_competitor(), make_competitor()
    play(a, b, [W1])
    assert tasks.rate_environment(hidden_env.pk) == 1
    planned = Duel.objects.filter(kind=Duel.Kind.LADDER, state=Duel.State.QUEUED)
    assert planned.count() == 1  # the rating planned the next duel at once
    planned.delete()
    assert tasks.matchmake() == 1
    assert tasks.check_editions() == 1
    assert tasks.refresh_tie_fit(hidden_env.pk) == 1
    assert "tournament-manager-matchmake" in tasks.app.conf.beat_schedule
    assert "tournament-manager-refresh-tie-fits" in tasks.app.conf.beat_schedule


def test_the_commands_recompute_and_start_editions(hidden_env, make_competitor):
    a, b = make_competitor(), make_competitor()
    play(a, b, [W1, D])
    rate_pending_duels(hidden_env.pk)
    out = StringIO()
    call_command("recompute_ratings", "hidden-skill", stdout=out)
    assert "replayed 1 duel(s)" in out.getvalue()
    call_command("start_tournament", "hidden-skill", stdout=out)
    assert "edition 1 started with 1 duel(s)" in out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_concurrent_matchmaking_never_double_books(tm_settings, make_competitor, hidden_env):
    """Four threads matchmake at once; the environment lock keeps every competitor in at most one duel."""
    import threading

    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    tm_settings.TM_MAX_IN_FLIGHT = 1
    tm_settings.TM_LADDER_QUEUE_TARGET = 50
    for _ in range(10):
        make_competitor()
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        try:
            barrier.wait()
            matchmake(hidden_env.pk, rng=random.Random(seed))
        except BaseException as exc:  # reported below, in the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    duels = ladder_duels(hidden_env)
    players = [r.competitor_id for d in duels for r in (d.revision_1, d.revision_2)]
    assert len(duels) == 5 and len(players) == len(set(players))


def test_matchmaking_never_pairs_two_competitors_running_the_same_zip(hidden_env, make_competitor):
    kit = "ab" * 32
    twins = [make_competitor() for _ in range(2)]
    for twin in twins:
        add_revision(twin, content_hash=kit)
    assert {c.code for c, _ in ladder_candidates(hidden_env.pk) if c.id in {t.pk for t in twins}} == {kit}
    for seed in range(5):
        assert matchmake(hidden_env.pk, rng=random.Random(seed), batch_size=5) == []
    other = make_competitor()
    created = matchmake(hidden_env.pk, rng=random.Random(0), batch_size=5)
    assert len(created) == 1
    pair = {created[0].revision_1.competitor_id, created[0].revision_2.competitor_id}
    assert other.pk in pair and len(pair & {t.pk for t in twins}) == 1
