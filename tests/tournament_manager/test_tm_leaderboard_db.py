"""The leaderboard and its Bradley-Terry tie fit: fitted in the background, stored, only read by requests."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from tm_factories import add_revision, play

from core.actions.pair_records import rebuild_pair_records
from core.models import Duel, PairRecord, Rating
from tournament_manager import bradley_terry, tasks, tie_fit
from tournament_manager.actions import rate_pending_duels
from tournament_manager.leaderboard import build_leaderboard, leaderboard

W1, W2, D, E1, E2, OE = (
    "PLAYER_1_WIN",
    "PLAYER_2_WIN",
    "DRAW",
    "PLAYER_1_ERROR",
    "PLAYER_2_ERROR",
    "OTHER_ERROR",
)


def fitting_forbidden(*args, **kwargs):
    raise AssertionError("the leaderboard must never fit on the request path")


@pytest.fixture
def no_fitting(monkeypatch):
    """A guard: any Bradley-Terry fit raises."""
    monkeypatch.setattr(bradley_terry, "fit_pair_counts", fitting_forbidden)
    monkeypatch.setattr(bradley_terry, "fit", fitting_forbidden)


@pytest.fixture
def ladder(hidden_env, make_competitor):
    """strong > mid > weak, and weak and twin indistinguishable; rated, no tie fit yet."""
    bots = {n: make_competitor(n) for n in ("strong", "mid", "weak", "twin")}
    for _ in range(4):
        play(bots["strong"], bots["mid"], [W1] * 6)
        play(bots["mid"], bots["weak"], [W1] * 6)
        play(bots["weak"], bots["twin"], [W1, W2, D, W1, W2, D])
    rate_pending_duels(hidden_env.pk)
    return bots


def test_without_a_fit_every_competitor_has_its_own_rank_and_a_fit_is_requested(
    hidden_env, ladder, no_fitting, django_assert_max_num_queries
):
    with django_assert_max_num_queries(2):  # the version, then the rows
        rows = leaderboard(hidden_env)
    assert [r.rank for r in rows] == [1, 2, 3, 4]
    assert all(r.bt_strength is None for r in rows)
    assert not tie_fit.request_refresh(hidden_env.pk)  # the leaderboard already requested one


def test_the_background_fit_makes_the_tie_groups_the_leaderboard_shows(
    hidden_env, ladder, monkeypatch, django_assert_max_num_queries
):
    tie_fit.refresh(hidden_env.pk)
    monkeypatch.setattr(bradley_terry, "fit_pair_counts", fitting_forbidden)
    with django_assert_max_num_queries(2):  # the version, then the rows
        rows = leaderboard(hidden_env)
    assert [r.competitor for r in rows][:2] == ["strong", "mid"]
    assert [r.bt_strength for r in rows] == sorted((r.bt_strength for r in rows), reverse=True)
    ranks = {r.competitor: r.rank for r in rows}
    assert ranks["strong"] == 1 and ranks["mid"] == 2
    assert ranks["weak"] == ranks["twin"] == 3
    top = rows[0]
    assert (top.matches, top.wins, top.owner) == (24, 24, "owner")
    assert top.bt_lower <= top.bt_strength <= top.bt_upper


def test_the_order_is_the_fits_expected_score_against_the_field_not_trueskill(hidden_env, ladder):
    """TrueSkill says weak > mid > strong (set by hand here; a ladder's schedule or the order of results
    can do it): the leaderboard follows the fit of the results, and shows what a rank estimates."""
    tie_fit.refresh(hidden_env.pk)
    for name, mu in (("strong", 10.0), ("mid", 20.0), ("weak", 30.0), ("twin", 29.0)):
        Rating.objects.filter(environment=hidden_env, competitor=ladder[name]).update(
            mu=mu, sigma=1.0, skill=mu - 3
        )
    rows = leaderboard(hidden_env)
    assert [r.competitor for r in rows][:2] == ["strong", "mid"]
    assert [r.rank for r in rows] == [1, 2, 3, 3]
    strong = rows[0]
    assert strong.field_score_lower <= strong.field_score <= strong.field_score_upper
    assert strong.field_score > 0.6 > rows[-1].field_score  # strong won all 24 of its matches


def test_the_page_and_the_api_show_the_order_and_the_score_against_the_field(hidden_env, ladder, client):
    tie_fit.refresh(hidden_env.pk)
    Rating.objects.filter(environment=hidden_env, competitor=ladder["strong"]).update(mu=0.0, skill=-3.0)
    api = client.get(f"/api/environments/{hidden_env.slug}/leaderboard/").json()["results"]
    assert [r["competitor"] for r in api][:2] == ["strong", "mid"]
    top = api[0]["field_score"]
    assert top["lower"] <= top["score"] <= top["upper"] and top["score"] > 0.6
    page = client.get(f"/games/{hidden_env.slug}/").content.decode()
    assert page.count('data-testid="field-score"') == 4
    assert page.index(">strong</a>") < page.index(">mid</a>")
    assert "expected score against the whole field" in page


def test_rating_a_duel_requests_a_refit_and_the_old_fit_is_shown_meanwhile(
    hidden_env, ladder, make_competitor, no_fitting
):
    cache.delete(tie_fit._pending_key(hidden_env.pk))
    newcomer = make_competitor("newcomer")
    play(newcomer, ladder["strong"], [W1, W1])
    assert tasks.rate_environment(hidden_env.pk) == 1
    assert not tie_fit.request_refresh(hidden_env.pk)  # the rating task requested it


def test_a_stale_fit_is_still_used_and_unseen_competitors_rank_alone(
    hidden_env, ladder, make_competitor, monkeypatch
):
    tie_fit.refresh(hidden_env.pk)
    newcomer = make_competitor("newcomer")
    play(newcomer, ladder["twin"], [W2, W2, W2])
    rate_pending_duels(hidden_env.pk)
    assert tie_fit.is_stale(hidden_env.pk)
    monkeypatch.setattr(bradley_terry, "fit_pair_counts", fitting_forbidden)
    ranks = {r.competitor: r.rank for r in leaderboard(hidden_env)}
    assert ranks["weak"] == ranks["twin"]
    positions = {r.competitor: k for k, r in enumerate(leaderboard(hidden_env), start=1)}
    assert ranks["newcomer"] == positions["newcomer"] == 5  # after the ones the fit has seen


def test_the_periodic_check_refits_only_stale_environments(hidden_env, ladder):
    assert tasks.refresh_tie_fits() == 1
    assert not tie_fit.is_stale(hidden_env.pk)
    assert tasks.refresh_tie_fits() == 0


def test_a_stored_fit_survives_an_emptied_cache(hidden_env, ladder):
    fitted = tie_fit.refresh(hidden_env.pk)
    cache.clear()  # another process's cache, or a flushed Redis: the file copy remains
    assert tie_fit.stored_fit(hidden_env.pk) == fitted
    assert {r.rank for r in leaderboard(hidden_env)} == {1, 2, 3}


def test_storing_a_fit_changes_the_ratings_version_pages_cache_under(hidden_env, ladder):
    before = max(Rating.objects.filter(environment=hidden_env).values_list("updated_at", flat=True))
    tie_fit.refresh(hidden_env.pk)
    after = max(Rating.objects.filter(environment=hidden_env).values_list("updated_at", flat=True))
    assert after > before


def test_pair_counts_are_aggregated_per_pair_from_each_sides_view(hidden_env, make_competitor):
    a, b, c = make_competitor("a"), make_competitor("b"), make_competitor("c")
    play(a, b, [W1, W2, D, E1, E2, OE])
    play(b, a, [W1, W1])
    play(b, c, [D])
    play(a, c, [W1], kind=Duel.Kind.CHALLENGE)  # friendly: not rated, not counted
    play(c, a, [W1])  # finished, its rating still to come: counted (the record path counts each result)
    Duel.objects.filter(environment=hidden_env).exclude(kind=Duel.Kind.CHALLENGE).exclude(
        revision_1__competitor=c
    ).update(rated=True)
    ids, pairs, table = tie_fit.pair_counts(hidden_env.pk)
    got = {}
    for (lo, hi), (losses, draws, wins) in zip(pairs.tolist(), table.tolist(), strict=True):
        got[(ids[lo], ids[hi])] = (losses, draws, wins)
    first, second = sorted([a.pk, b.pk])
    a_view = (4.0, 1.0, 2.0)  # a: W1, E2 won; W2, E1 and b's two wins lost; one draw
    expected_ab = a_view if first == a.pk else (a_view[2], a_view[1], a_view[0])
    assert got[(first, second)] == expected_ab
    assert got[tuple(sorted([b.pk, c.pk]))] == (0.0, 1.0, 0.0)
    assert got[(a.pk, c.pk)] == (1.0, 0.0, 0.0)  # a (the lower id) lost c's one win
    assert len(got) == 3
    assert_same_counts(tie_fit.pair_counts(hidden_env.pk), tie_fit.pair_counts_from_matches(hidden_env.pk))
    kept = tie_fit.pair_counts(hidden_env.pk)
    PairRecord.objects.filter(environment=hidden_env).update(duels=0, low_wins=0, high_wins=0)
    rebuild_pair_records(hidden_env.pk)  # the backfill and repair: the same counts from the duels
    assert_same_counts(tie_fit.pair_counts(hidden_env.pk), kept)


def assert_same_counts(kept: tuple, aggregated: tuple) -> None:
    """The counts kept by the record path equal the aggregation over every match."""
    assert kept[0] == aggregated[0]
    assert kept[1].tolist() == aggregated[1].tolist()
    assert kept[2].tolist() == aggregated[2].tolist()


def test_ratings_with_a_high_sigma_are_marked_provisional(hidden_env, ladder, settings, client):
    settings.TM_PROVISIONAL_SIGMA = 2.0
    Rating.objects.filter(environment=hidden_env, competitor=ladder["mid"]).update(sigma=2.5)
    Rating.objects.filter(environment=hidden_env).exclude(competitor=ladder["mid"]).update(sigma=1.5)
    rows = {r.competitor: r for r in leaderboard(hidden_env)}
    assert [n for n, r in rows.items() if r.provisional] == ["mid"]
    page = client.get(f"/games/{hidden_env.slug}/").content.decode()
    assert page.count('data-testid="provisional"') == 1
    mid_row = next(line for line in page.split("<tr>") if ">mid</a>" in line)
    assert 'data-testid="provisional"' in mid_row


def test_a_significant_cycle_is_shown_on_the_game_page_and_in_the_api(hidden_env, make_competitor, client):
    """Rock beats scissors beats paper beats rock, 9 to 1 each: the cycle is named on the page and in the
    API, with the population view (each a third of the Nash mixture, the weak agent outside it)."""
    rock, paper, scissors, weak = (make_competitor(n) for n in ("rock", "paper", "scissors", "weak"))
    for winner, loser in ((rock, scissors), (scissors, paper), (paper, rock)):
        play(winner, loser, [W1] * 9 + [W2])
    for bot in (rock, paper, scissors):
        play(bot, weak, [W1] * 10)
    rate_pending_duels(hidden_env.pk)
    fit = tie_fit.refresh(hidden_env.pk)
    assert len(fit.cycles) == 1
    data = client.get(f"/api/environments/{hidden_env.slug}/leaderboard/").json()["intransitivity"]
    (cycle,) = data["cycles"]
    assert sorted(cycle["competitors"]) == ["paper", "rock", "scissors"]
    assert cycle["scores"] == [0.9, 0.9, 0.9]
    mass = {r["competitor"]: r["mass"] for r in data["population"]}
    assert mass["weak"] == 0.0 and all(abs(mass[n] - 1 / 3) < 1e-6 for n in ("rock", "paper", "scissors"))
    assert data["cyclic_game"] is False  # the hidden-skill game: the page shows cycles, not the population
    page = client.get(f"/games/{hidden_env.slug}/").content.decode()
    assert 'data-testid="cycles"' in page and 'data-testid="population"' not in page
    assert (
        "rock beats scissors (90 %)" in page
        or "paper beats rock (90 %)" in page
        or "scissors beats paper (90 %)" in page
    )


def test_no_cycle_no_section(hidden_env, ladder, client):
    tie_fit.refresh(hidden_env.pk)
    assert 'data-testid="intransitivity"' not in client.get(f"/games/{hidden_env.slug}/").content.decode()


def test_a_rating_round_is_reflected_by_reading_only_the_rows_it_changed(
    hidden_env, ladder, make_competitor, monkeypatch, django_assert_max_num_queries
):
    """The process's snapshot takes the rows a rating round stamped; the others stay the same objects,
    and the result is exactly what a build from scratch gives (a newcomer the fit has not seen included)."""
    tie_fit.refresh(hidden_env.pk)
    monkeypatch.setattr(bradley_terry, "fit_pair_counts", fitting_forbidden)
    before = {r.competitor_id: r for r in leaderboard(hidden_env)}
    newcomer = make_competitor("newcomer")
    play(ladder["mid"], newcomer, [W1, W1])
    rate_pending_duels(hidden_env.pk)
    with django_assert_max_num_queries(2):  # the version, then the changed rows
        after = leaderboard(hidden_env)
    assert after == build_leaderboard(hidden_env.pk)
    changed = {r.competitor for r in after if before.get(r.competitor_id) is not r}
    assert changed == {"mid", "newcomer"}
    assert [r.competitor for r in after][-1] == "newcomer" and after[-1].rank == 5
    with django_assert_max_num_queries(1):  # nothing changed: the version only
        assert leaderboard(hidden_env) == after


def test_a_new_fit_or_a_vanished_rating_rebuilds_the_snapshot(hidden_env, ladder, make_competitor):
    leaderboard(hidden_env)
    tie_fit.refresh(hidden_env.pk)  # a new fit: ranks and field scores change for every row
    rows = leaderboard(hidden_env)
    assert rows == build_leaderboard(hidden_env.pk) and all(r.field_score is not None for r in rows)
    Rating.objects.filter(competitor=ladder["twin"]).delete()  # e.g. its competitor deleted
    assert [r.competitor for r in leaderboard(hidden_env)] == ["strong", "mid", "weak"]


def test_names_owners_versions_and_pauses_are_re_read_alone_and_only_their_rows_replaced(
    hidden_env, ladder, make_competitor, monkeypatch, django_assert_num_queries
):
    """What a row shows without being a rating (a competitor's name, its owner's name, its playing version,
    a pause) changes without a stamp: once per window the snapshot reads those columns alone (one query,
    no rating column) and replaces only the rows they changed. The result is exactly a build from scratch;
    the untouched rows stay the same objects (so the API serializes only the changed ones again)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from core.actions.accounts import update_profile
    from core.actions.competitors import set_competitor_status
    from core.models import Competitor
    from tournament_manager import leaderboard as board

    tie_fit.refresh(hidden_env.pk)
    monkeypatch.setattr(bradley_terry, "fit_pair_counts", fitting_forbidden)
    newcomer = make_competitor("newcomer")  # rated after the fit: a row the fit has not seen
    play(ladder["mid"], newcomer, [W1, W1])
    rate_pending_duels(hidden_env.pk)
    window = [1]
    monkeypatch.setattr(board, "_details_window", lambda: window[0])
    before = {r.competitor_id: r for r in leaderboard(hidden_env)}

    set_competitor_status(ladder["mid"].pk, Competitor.Status.PAUSED, "too many errors")  # a pause
    Competitor.objects.filter(pk=ladder["weak"].pk).update(name="weaker")  # a rename (fitted row)
    Competitor.objects.filter(pk=newcomer.pk).update(name="late")  # a rename (row not in the fit)
    update_profile(ladder["twin"].owner, display_name="", team="", github="twin-gh")  # the owner's name
    add_revision(ladder["twin"])  # a new playing version
    assert leaderboard(hidden_env) == list(before.values())  # within the window: not read yet

    window[0] = 2  # the next window
    with CaptureQueriesContext(connection) as queries:
        after = leaderboard(hidden_env)
    assert after == build_leaderboard(hidden_env.pk)
    assert [r.competitor_id for r in after] == list(before)  # the order never depends on these columns
    shown = {r.competitor_id: (r.competitor, r.owner, r.version, r.is_paused) for r in after}
    assert shown[ladder["mid"].pk][3] is True
    assert shown[ladder["weak"].pk][0] == "weaker" and shown[newcomer.pk][0] == "late"
    assert shown[ladder["twin"].pk][1:3] == ("twin-gh", 2)
    replaced = {r.competitor for r in after if before[r.competitor_id] is not r}
    assert replaced == {"mid", "weaker", "late", "twin"}  # "strong" is the same object
    sql = [q["sql"] for q in queries.captured_queries]
    assert len(sql) == 2  # the version, then the details
    select = sql[1].split(" FROM ")[0]
    for column in ('"name"', '"status"', '"display_name"', '"github"', '"version"'):
        assert column in select
    for rating_column in ('"mu"', '"sigma"', '"skill"', '"matches"', '"updated_at"', '"last_played_at"'):
        assert rating_column not in select

    window[0] = 3
    with django_assert_num_queries(2):  # nothing changed since: the same objects again
        again = leaderboard(hidden_env)
    assert all(a is b for a, b in zip(again, after, strict=True))


def test_a_new_competitor_and_a_vanished_one_show_with_the_details_refresh(
    hidden_env, ladder, make_competitor, monkeypatch
):
    """A competitor rated for the first time shows through the ratings' stamps; one deleted through the row
    count (a rebuild); both in the same window too, with the details re-read on every call."""
    from tournament_manager import leaderboard as board

    tie_fit.refresh(hidden_env.pk)
    monkeypatch.setattr(board, "DETAILS_SECONDS", 0.0)
    leaderboard(hidden_env)
    newcomer = make_competitor("newcomer")
    play(ladder["strong"], newcomer, [W1, W2])
    rate_pending_duels(hidden_env.pk)
    Rating.objects.filter(competitor=ladder["twin"]).delete()  # the row count stays 4
    rows = leaderboard(hidden_env)
    assert rows == build_leaderboard(hidden_env.pk)
    assert {r.competitor for r in rows} == {"strong", "mid", "weak", "newcomer"}


def test_the_api_shows_a_rename_in_the_next_window_under_a_new_etag(hidden_env, ladder, client, monkeypatch):
    """A rename changes no rating: the leaderboard API's version carries the window in which the process saw
    the details change, so the next window's answer has the new name under a new ETag, and only the renamed
    row is serialized again."""
    from core.models import Competitor
    from tournament_manager import leaderboard as board
    from web.api import leaderboard as api

    tie_fit.refresh(hidden_env.pk)
    window = [1]
    monkeypatch.setattr(board, "_details_window", lambda: window[0])
    url = f"/api/environments/{hidden_env.slug}/leaderboard/"
    first = client.get(url)
    etag, serialized = first["ETag"], dict(api._reflected[hidden_env.pk].by_competitor)
    Competitor.objects.filter(pk=ladder["mid"].pk).update(name="middle")
    assert client.get(url, HTTP_IF_NONE_MATCH=etag).status_code == 304  # within the window: not read yet
    window[0] = 2
    renamed = client.get(url, HTTP_IF_NONE_MATCH=etag)
    assert renamed.status_code == 200 and renamed["ETag"] != etag
    names = [r["competitor"] for r in renamed.json()["results"]]
    assert "middle" in names and "mid" not in names
    after = api._reflected[hidden_env.pk].by_competitor
    again_serialized = {cid for cid, (_, data) in after.items() if data is not serialized[cid][1]}
    assert again_serialized == {ladder["mid"].pk}
    window[0] = 3  # nothing changed since: the same version, a 304
    assert client.get(url, HTTP_IF_NONE_MATCH=renamed["ETag"]).status_code == 304
