"""Ratings in the database: applied once, in order, under a lock; recomputable; new revisions reset sigma."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from tm_factories import add_revision, play, record

from core.actions import schedule_duel
from core.models import Duel, Rating, RatingHistory
from tournament_manager.actions import rate_pending_duels, recompute_ratings
from tournament_manager.ladder import DuelRecord, RatingState, apply_duel
from tournament_manager.rating import Skill, TrueSkillRater

W1, W2, D, E1, E2, OE = (
    "PLAYER_1_WIN",
    "PLAYER_2_WIN",
    "DRAW",
    "PLAYER_1_ERROR",
    "PLAYER_2_ERROR",
    "OTHER_ERROR",
)


def snapshot(env) -> dict:
    fields = (
        "competitor_id",
        "mu",
        "sigma",
        "skill",
        "matches",
        "wins",
        "draws",
        "losses",
        "errors",
        "duels",
    )
    return {r[0]: r[1:] for r in Rating.objects.filter(environment=env).values_list(*fields)}


def test_a_duel_updates_both_ratings_match_by_match(hidden_env, make_competitor):
    a, b = make_competitor(), make_competitor()
    play(a, b, [W1, W1, D, W2])
    assert rate_pending_duels(hidden_env.pk) == 1

    rater = TrueSkillRater()
    sa, sb = rater.initial(), rater.initial()
    for outcome in (1.0, 1.0, 0.5, 0.0):
        sa, sb = rater.rate(sa, sb, outcome)
    ra, rb = Rating.objects.get(competitor=a), Rating.objects.get(competitor=b)
    assert (ra.mu, ra.sigma) == (sa.mu, sa.sigma)
    assert (rb.mu, rb.sigma) == (sb.mu, sb.sigma)
    assert ra.skill == pytest.approx(sa.mu - 3 * sa.sigma)
    assert (ra.matches, ra.wins, ra.draws, ra.losses, ra.errors, ra.duels) == (4, 2, 1, 1, 0, 1)
    assert (rb.wins, rb.losses) == (1, 2)


def test_a_duel_is_rated_once(hidden_env, make_competitor):
    a, b = make_competitor(), make_competitor()
    duel = play(a, b, [W1, W2])
    rate_pending_duels(hidden_env.pk)
    before = snapshot(hidden_env)
    assert rate_pending_duels(hidden_env.pk) == 0
    assert snapshot(hidden_env) == before
    duel.refresh_from_db()
    assert duel.rated and duel.rated_at is not None
    assert RatingHistory.objects.filter(duel=duel).count() == 2


def test_player_errors_are_losses_and_infrastructure_errors_count_for_nothing(hidden_env, make_competitor):
    a, b = make_competitor(), make_competitor()
    play(a, b, [E1, OE, OE])
    rate_pending_duels(hidden_env.pk)
    ra, rb = Rating.objects.get(competitor=a), Rating.objects.get(competitor=b)
    assert (ra.matches, ra.errors, ra.losses) == (1, 1, 0)
    assert (rb.matches, rb.wins) == (1, 1)
    assert ra.mu < rb.mu


def test_challenges_do_not_move_ratings(hidden_env, make_competitor):
    a, b = make_competitor(), make_competitor()
    play(a, b, [W1, W1], kind=Duel.Kind.CHALLENGE)
    assert rate_pending_duels(hidden_env.pk) == 1
    ra = Rating.objects.get(competitor=a)
    assert (ra.mu, ra.matches) == (25.0, 0)


def test_a_new_revision_keeps_the_mean_and_resets_the_uncertainty(hidden_env, make_competitor):
    a, b = make_competitor(), make_competitor()
    for _ in range(3):
        play(a, b, [W1, W1, W1, W1])
    rate_pending_duels(hidden_env.pk)
    before = Rating.objects.get(competitor=a)
    b_before = Skill(*Rating.objects.filter(competitor=b).values_list("mu", "sigma").get())
    add_revision(a)
    play(b, a, [D])
    rate_pending_duels(hidden_env.pk)

    rater = TrueSkillRater()
    _, expected = rater.rate(b_before, Skill(before.mu, rater.initial().sigma), 0.5)
    after = Rating.objects.get(competitor=a)
    assert after.sigma > before.sigma
    assert (after.mu, after.sigma) == (expected.mu, expected.sigma)


def test_recompute_gives_the_same_numbers_as_incremental_rating(hidden_env, make_competitor):
    bots = [make_competitor() for _ in range(4)]
    script = [(0, 1, [W1, D]), (2, 3, [W2, W2, E1]), (0, 2, [W1, OE]), (1, 3, [D, D])]
    for round_ in range(3):
        for i, j, results in script:
            play(bots[i], bots[j], results)
        if round_ == 1:
            add_revision(bots[2])
        rate_pending_duels(hidden_env.pk)
    incremental = snapshot(hidden_env)
    history = RatingHistory.objects.count()
    assert recompute_ratings(hidden_env.pk) == 12
    assert snapshot(hidden_env) == incremental
    assert RatingHistory.objects.count() == history


def test_recompute_also_rates_pending_duels(hidden_env, make_competitor):
    a, b = make_competitor(), make_competitor()
    play(a, b, [W1])
    recompute_ratings(hidden_env.pk)
    assert Rating.objects.get(competitor=a).wins == 1
    assert not Duel.objects.filter(rated=False).exists()


def test_the_database_replay_equals_the_pure_replay(hidden_env, make_competitor):
    a, b, c = make_competitor(), make_competitor(), make_competitor()
    duels = [play(a, b, [W1, D]), play(b, c, [W2]), play(c, a, [E2, W1])]
    rate_pending_duels(hidden_env.pk)
    rater, states = TrueSkillRater(), {}
    for d in duels:
        apply_duel(
            states,
            DuelRecord(
                d.pk,
                d.revision_1.competitor_id,
                d.revision_1_id,
                d.revision_2.competitor_id,
                d.revision_2_id,
                d.finished_at,
                [m.result for m in d.matches.order_by("index")],
            ),
            rater,
        )
    for cid, state in states.items():
        row = Rating.objects.get(competitor_id=cid)
        assert isinstance(state, RatingState)
        assert (row.mu, row.sigma, row.matches) == (state.skill.mu, state.skill.sigma, state.matches)


@pytest.mark.django_db(transaction=True)
def test_concurrent_results_lose_no_update(tm_settings, make_competitor, hidden_env):
    """Eight threads record duels and rate at once: every duel is rated exactly once, and the ratings equal
    a sequential replay of the same results in the order they were rated."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    bots = [make_competitor() for _ in range(6)]
    scripts = [[W1, W2, D], [W1, W1], [E2, W1, D], [W2], [D, D, W1], [W1, OE], [W2, W2, W2], [D]]
    duels = []
    for k, results in enumerate(scripts * 3):
        a, b = bots[k % 6], bots[(k + 1 + k // 6) % 6]
        duels.append((schedule_duel(a.current_revision_id, b.current_revision_id).pk, results))
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def worker(chunk):
        try:
            barrier.wait()
            for duel_id, results in chunk:
                assert record(duel_id, results)
                rate_pending_duels(hidden_env.pk)
        except BaseException as exc:  # reported below, in the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(duels[t::8],)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert not Duel.objects.filter(rated=False).exists()
    concurrent = snapshot(hidden_env)
    total_rated_matches = sum(len([r for r in res if r != OE]) for _, res in duels)
    assert sum(v[3] for v in concurrent.values()) == 2 * total_rated_matches
    assert RatingHistory.objects.count() == 2 * len(duels)
    recompute_ratings(hidden_env.pk)
    assert snapshot(hidden_env) == concurrent


def test_rating_stamps_keep_increasing_when_this_clock_is_behind(hidden_env, make_competitor):
    """A round's stamp must follow every earlier one even when another rater's clock ran ahead; the tie fit
    storing its result never lowers the bound the stamps are taken from."""
    from datetime import timedelta

    from django.db.models import Max

    from tournament_manager import tie_fit

    a, b = make_competitor(), make_competitor()
    first = play(a, b, [W1, D])
    rate_pending_duels(hidden_env.pk)
    first.refresh_from_db()
    ahead = first.rated_at + timedelta(hours=1)  # a rater on a machine an hour ahead stamped last
    Rating.objects.filter(environment=hidden_env).update(updated_at=ahead)
    tie_fit.store(hidden_env.pk, tie_fit.compute(hidden_env.pk))  # this machine's clock: an hour behind
    assert Rating.objects.filter(environment=hidden_env).aggregate(m=Max("updated_at"))["m"] > ahead
    second = play(a, b, [W2])
    rate_pending_duels(hidden_env.pk)
    second.refresh_from_db()
    assert second.rated_at > ahead
    ratings = snapshot(hidden_env)
    recompute_ratings(hidden_env.pk)
    assert snapshot(hidden_env) == ratings


def test_season_finals_duels_are_marked_rated_but_never_touch_the_ratings(hidden_env, make_competitor):
    a, b = make_competitor(), make_competitor()
    play(a, b, ["PLAYER_1_WIN", "PLAYER_2_WIN"])
    rate_pending_duels(hidden_env.pk)
    before = {r.competitor_id: (r.mu, r.sigma, r.duels, r.matches) for r in Rating.objects.all()}
    history = RatingHistory.objects.count()
    finals = play(a, b, ["PLAYER_1_WIN"] * 4, kind=Duel.Kind.FINALS)
    assert rate_pending_duels(hidden_env.pk) == 1
    finals.refresh_from_db()
    assert finals.rated
    assert {r.competitor_id: (r.mu, r.sigma, r.duels, r.matches) for r in Rating.objects.all()} == before
    assert RatingHistory.objects.count() == history
