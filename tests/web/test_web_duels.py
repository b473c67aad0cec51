"""Duel and competitor pages as ladder players read them: how each side scored, the rating and rank each
duel moved, matches appearing while a duel runs, a paged and filtered duel history, rating per revision."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from core.models import Duel, Revision
from tests.web import factories
from web import queries

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair(env, alice, bob):
    """Alice's "solid" and Bob's "flaky", both playing."""
    return factories.competitor(alice, env, "solid"), factories.competitor(bob, env, "flaky")


def test_a_win_by_the_opponents_errors_says_so(client, pair):
    solid, flaky = pair
    duel = factories.error_duel(solid, flaky, erring=2, kind="TIMEOUT", num_matches=6)
    html = client.get(reverse("web:duel", args=[duel.pk])).content.decode()
    headline = re.search(r'data-testid="duel-headline">([^<]*)<', html).group(1)
    assert headline == "solid won 6 : 0, every match by flaky&#x27;s errors (TIMEOUT)."
    assert "6 matches: 0 on the board, " in html
    assert "6 by the opponent's errors</span> (TIMEOUT \u00d76)" in html
    assert "6 by its own errors" in html
    assert "Wins</dt><dd>0" not in html  # the old "Wins 0 · Score 6.0"


def test_match_errors_name_the_player_and_count_its_own_moves(client, pair, bob):
    solid, flaky = pair
    duel = factories.error_duel(solid, flaky, erring=2, kind="CRASH", num_matches=2)
    html = client.get(reverse("web:duel", args=[duel.pk])).content.decode()
    # Match 1: solid moved first, flaky crashed on move 2 of the match; everyone reads the platform's words.
    assert "flaky (player 2) crashed (its code raised an exception or its process ended), after 1" in html
    assert "RuntimeError" not in html
    assert "flaky erred" in html  # the result column names who erred
    match = duel.matches.get(index=0)
    client.force_login(bob)  # flaky's owner reads the referee's text, its moves counted as its own
    page = client.get(reverse("web:match", args=[match.pk])).content.decode()
    assert "flaky (player 2) raised RuntimeError at move 2 of the match (its 1st move)" in page
    assert (
        '<pre class="code-error">Traceback (most recent call last):\n  File &quot;/agent/player.py&quot;'
        in page
    )


def test_the_duel_page_shows_each_sides_rating_change_and_its_leaderboard_place(client, env, pair, bob):
    """The place is the leaderboard's (field score, then mu - 3 sigma for those not yet in the fit), never
    another order; mu, sigma and mu - 3 sigma before and after the duel."""
    solid, flaky = pair
    third = factories.competitor(bob, env, "third")
    early = factories.duel(solid, third, num_matches=2)
    factories.rate_duel(early, {solid: (24.0, 6.0), third: (27.0, 5.0)})  # third ahead: 12.0 vs 6.0
    duel = factories.duel(solid, flaky, num_matches=2)
    factories.rate_duel(duel, {flaky: (26.0, 6.0), solid: (30.0, 4.0)})  # solid now 18.0, first
    html = client.get(reverse("web:duel", args=[duel.pk])).content.decode()
    table = re.search(r'data-testid="rating-change-1">(.*?)</table>', html, re.S).group(1)
    board = {row.competitor_id: row.rank for row in queries.leaderboard(env)}
    assert board == {solid.pk: 1, third.pk: 2, flaky.pk: 3}
    assert re.search(r'data-testid="standing-1">#1 of 3<', table)
    cells = re.findall(r'<td class="num">(.*?)</td>', table, re.S)
    assert cells[0] == "24.00" and "30.00" in cells[1] and '"delta up">+6.00' in cells[1]  # mu
    assert cells[2:4] == ["6.00", "4.00"]  # sigma before -> after
    assert cells[4] == "6.00" and "18.00" in cells[5] and '"delta flat">+12.00' in cells[5]  # mu - 3 sigma
    assert "Rank by" not in html  # no second order beside the leaderboard's
    flaky_table = re.search(r'data-testid="rating-change-2">(.*?)</table>', html, re.S).group(1)
    assert re.search(r'data-testid="standing-2">#3 of 3<', flaky_table)
    assert "25.00" in flaky_table  # it started from the initial mu
    story = re.search(r'data-testid="rating-story-2">(.*?)</div>', html, re.S).group(1)
    assert "On the leaderboard it is #3 of 3 for now" in story and "has not included it yet" in story


def test_an_unrated_challenge_shows_no_rating_change(client, pair):
    solid, flaky = pair
    duel = factories.duel(solid, flaky, num_matches=2)
    Duel.objects.filter(pk=duel.pk).update(kind=Duel.Kind.CHALLENGE)
    html = client.get(reverse("web:duel", args=[duel.pk])).content.decode()
    assert "rating-change-1" not in html and "challenge (unrated)" in html


def test_a_running_duel_shows_the_matches_recorded_so_far_and_polls_for_more(client, pair):
    solid, flaky = pair
    duel = factories.running_duel(solid, flaky, num_matches=6)
    url = reverse("web:duel", args=[duel.pk])
    html = client.get(url).content.decode()
    assert 'data-testid="duel-live"' in html
    assert f'hx-get="{reverse("web:duel-matches", args=[duel.pk])}"' in html
    assert "No match recorded yet" in html
    factories.record_match(duel, 0)
    factories.record_match(duel, 1)
    part = client.get(reverse("web:duel-matches", args=[duel.pk]), HTTP_HX_REQUEST="true")
    assert not part.has_header("HX-Refresh")
    fragment = part.content.decode()
    assert fragment.count('data-testid="match-row"') == 2
    assert "2 of 6 matches recorded" in fragment


def test_the_matches_fragment_reloads_the_page_once_the_duel_is_over(client, pair):
    solid, flaky = pair
    duel = factories.duel(solid, flaky, num_matches=2)
    part = client.get(reverse("web:duel-matches", args=[duel.pk]), HTTP_HX_REQUEST="true")
    assert part["HX-Refresh"] == "true"
    html = client.get(reverse("web:duel", args=[duel.pk])).content.decode()
    assert "duel-live" not in html and "hx-get" not in html


def test_player_logs_are_shown_to_their_owner_only(client, alice, pair):
    solid, flaky = pair
    duel = factories.duel(solid, flaky, num_matches=2)
    url = reverse("web:duel", args=[duel.pk])
    assert "player 1 says hello" not in client.get(url).content.decode()
    client.force_login(alice)
    html = client.get(url).content.decode()
    assert "player 1 says hello" in html and "player 2 secret log" not in html


@pytest.fixture
def history(env, alice, bob):
    """Alice's "hero" played 30 duels: 12 against "villain" (4 won by its errors), 18 against "other"."""
    hero = factories.competitor(alice, env, "hero")
    villain = factories.competitor(bob, env, "villain")
    other = factories.competitor(bob, env, "other")
    duels = []
    for i in range(30):
        if i < 4:
            duels.append(factories.error_duel(hero, villain, erring=2, num_matches=2))
        elif i < 12:
            duels.append(factories.duel(villain, hero, num_matches=2))
        else:
            duels.append(factories.duel(hero, other, num_matches=2, finished_ago_s=600 + i))
    return {"hero": hero, "villain": villain, "other": other, "duels": duels}


def test_the_duel_history_is_paged(client, history):
    url = reverse("web:competitor", args=[history["hero"].pk])
    first = client.get(url)
    assert len(first.context["history"]) == 25
    html = first.content.decode()
    assert "Page 1 of 2 · 30 duels" in html
    second = client.get(url + "?page=2")
    assert len(second.context["history"]) == 5
    shown = {row.duel.pk for row in first.context["history"]} | {
        row.duel.pk for row in second.context["history"]
    }
    assert shown == {d.pk for d in history["duels"]}


def test_the_duel_history_filters_by_opponent_result_and_errors(client, history):
    hero, villain = history["hero"], history["villain"]
    url = reverse("web:competitor", args=[hero.pk])
    rows = client.get(url, {"opponent": villain.pk}).context["history"]
    assert len(rows) == 12 and {r.theirs.competitor_id for r in rows} == {villain.pk}
    rows = client.get(url, {"opponent": villain.pk, "errors": "opponent"}).context["history"]
    assert len(rows) == 4 and all(r.outcome == "won" and r.their_errors == 2 for r in rows)
    assert not client.get(url, {"errors": "own"}).context["history"]
    won = client.get(url, {"result": "won"}).context["history"]
    assert won and all(r.outcome == "won" for r in won)
    lost = client.get(url, {"result": "lost"}).context["history"]
    assert all(r.outcome == "lost" for r in lost)
    html = client.get(url, {"result": "draw", "opponent": 999999}).content.decode()
    assert "No duel matches these filters." in html


def test_paging_keeps_the_filters(client, history):
    hero = history["hero"]
    url = reverse("web:competitor", args=[hero.pk])
    html = client.get(url, {"opponent": history["other"].pk}).content.decode()
    assert f'href="?opponent={history["other"].pk}&amp;page=2#duels"' not in html  # 18 fit on one page
    html = client.get(url, {"errors": ""}).content.decode()
    assert 'href="?page=2#duels"' in html


def test_the_history_shows_the_rating_change_of_each_rated_duel(client, history):
    hero, other = history["hero"], history["other"]
    duel = history["duels"][12]  # the newest against "other": on the first page
    factories.rate_duel(duel, {hero: (26.0, 7.0), other: (24.0, 7.0)})  # from 25, 8.333: +3.00 and more
    rows = client.get(reverse("web:competitor", args=[hero.pk])).context["history"]
    row = next(r for r in rows if r.duel.pk == duel.pk)
    assert row.change.mu_before == 25.0 and row.change.mu_after == 26.0
    assert round(row.change.skill_delta, 2) == ((26 - 21) - (25 - 25))


def test_the_api_lists_a_competitors_history_with_the_same_filters(client, history):
    hero, villain = history["hero"], history["villain"]
    data = client.get(
        "/api/duels/", {"competitor": hero.pk, "opponent": villain.pk, "errors": "opponent"}
    ).json()
    assert data["count"] == 4


def test_each_revision_shows_its_duels_and_the_rating_its_last_duel_left(client, env, alice, bob):
    mine = factories.competitor(alice, env, "evolving")
    rival = factories.competitor(bob, env, "rival")
    v1 = mine.current_revision
    d1 = factories.duel(mine, rival, num_matches=2)
    factories.rate_duel(d1, {mine: (23.0, 6.0), rival: (27.0, 6.0)})
    v2 = factories.revision(mine)  # eligible: now it plays
    mine.refresh_from_db()
    d2 = factories.duel(mine, rival, num_matches=2)
    d3 = factories.duel(rival, mine, num_matches=2)
    factories.rate_duel(d2, {mine: (26.0, 5.0), rival: (25.0, 5.5)})
    factories.rate_duel(d3, {mine: (28.0, 4.0), rival: (24.0, 5.0)})
    response = client.get(reverse("web:competitor", args=[mine.pk]))
    records = {row["revision"].pk: row["record"] for row in response.context["revision_rows"]}
    assert records[v1.pk].duels == 1 and records[v1.pk].mu == 23.0 and records[v1.pk].sigma == 6.0
    assert records[v2.pk].duels == 2 and records[v2.pk].mu == 28.0 and records[v2.pk].skill == 16.0
    assert records[v2.pk].wins + records[v2.pk].draws + records[v2.pk].losses == 4
    html = response.content.decode()
    assert re.search(r'data-testid="revision-row-2">.*?<strong>16.00</strong>', html, re.S)
    assert v2.state == Revision.State.ELIGIBLE


def test_once_fitted_the_duel_page_gives_the_leaderboards_score_against_the_field(client, env, pair):
    """The place and the score are the leaderboard's own (its field score, as the game page shows it)."""
    from core.actions.pair_records import rebuild_pair_records
    from tournament_manager import tie_fit

    solid, flaky = pair
    duel = factories.duel(solid, flaky, num_matches=4)
    factories.rate_duel(duel, {solid: (28.0, 5.0), flaky: (22.0, 5.0)})
    rebuild_pair_records(env.pk)
    tie_fit.refresh(env.pk)
    rows = {row.competitor_id: row for row in queries.leaderboard(env)}
    assert rows[solid.pk].field_score is not None
    html = client.get(reverse("web:duel", args=[duel.pk])).content.decode()
    for seat, comp in ((1, solid), (2, flaky)):
        row = rows[comp.pk]
        cell = re.search(rf'data-testid="standing-{seat}">(.*?)</td>', html, re.S).group(1)
        assert f"#{row.rank} of 2" in cell and f"score {round(row.field_score * 100)} %" in cell
        story = re.search(rf'data-testid="rating-story-{seat}">(.*?)</div>', html, re.S).group(1)
        assert f"with a score of {round(row.field_score * 100)} % (95 % interval" in story
