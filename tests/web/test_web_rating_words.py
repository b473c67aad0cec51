"""Numbers a newcomer can read (issue 32): a lost duel whose cautious skill (mu - 3 sigma) rose is
explained, not shown as a green gain; challenges show no rating change; the game says how long duels
really are; matches are numbered from 1 wherever people read them."""

from __future__ import annotations

import re

import pytest
from django.test import override_settings
from django.urls import reverse

from core.models import Duel, Match
from tests.web import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair(env, alice, bob):
    return factories.competitor(alice, env, "winner"), factories.competitor(bob, env, "loser")


def _lost_duel(pair):
    """loser lost 0 : 2, yet its mu - 3 sigma rose (sigma shrank more than mu fell): 25 - 3 * 8.333 = 0.00
    before, 24.34 - 3 * 6.0 = 6.34 after."""
    winner, loser = pair
    duel = factories.duel(winner, loser, num_matches=2)
    Duel.objects.filter(pk=duel.pk).update(
        result=Duel.Result.PLAYER_1_WIN, player_1_score=2.0, player_2_score=0.0
    )
    factories.rate_duel(duel, {winner: (27.0, 6.0), loser: (24.34, 6.0)})
    return duel


def test_a_lost_duel_shows_the_skill_estimate_falling_and_explains_the_rising_score(client, pair):
    duel = _lost_duel(pair)
    html = client.get(reverse("web:duel", args=[duel.pk])).content.decode()
    table = re.search(r'data-testid="rating-change-2">(.*?)</table>', html, re.S).group(1)
    assert '"delta down">-0.66' in table  # mu, in red: the result
    assert '"delta flat">+6.34' in table  # the score, in grey: no green gain after a loss
    assert '"delta up"' not in table
    assert "Uncertainty" in table and "Skill estimate" in table
    assert "Cautious skill" in table and "Leaderboard place" in table and "Rank by" not in table
    story = re.search(r'data-testid="rating-story-2">(.*?)</div>', html, re.S).group(1)
    assert "It lost this duel: its skill estimate \u03bc fell by 0.66 (from 25.00 to 24.34)." in story
    assert "uncertainty \u03c3 went from 8.33 to 6.00 (lower is surer)" in story
    assert "because the growing certainty outweighed the result" in story
    won = re.search(r'data-testid="rating-story-1">(.*?)</div>', html, re.S).group(1)
    assert "It won this duel: its skill estimate \u03bc rose by 2.00" in won
    assert "outweighed" not in won


def test_the_competitor_history_shows_the_skill_estimates_change_per_duel(client, pair):
    duel = _lost_duel(pair)
    html = client.get(reverse("web:competitor", args=[pair[1].pk])).content.decode()
    cell = re.search(r'data-testid="history-rating">(.*?)</td>', html, re.S).group(1)
    assert '"delta down">-0.66' in cell and "6.34" in cell and "+6.34" not in cell
    assert 'data-testid="rating-legend"' in html and "Uncertainty" in html
    assert duel.pk


def test_an_unrated_challenge_counted_as_played_shows_no_rating_change(client, pair):
    """The ratings count a challenge as played: it has history entries, with unchanged numbers."""
    winner, loser = pair
    factories.rate_duel(
        factories.duel(winner, loser, num_matches=2), {winner: (26.0, 7.0), loser: (24.0, 7.0)}
    )
    challenge = factories.duel(winner, loser, num_matches=2)
    Duel.objects.filter(pk=challenge.pk).update(kind=Duel.Kind.CHALLENGE)
    factories.rate_duel(challenge, {winner: (26.0, 7.0), loser: (24.0, 7.0)})
    html = client.get(reverse("web:duel", args=[challenge.pk])).content.decode()
    assert "rating-change-1" not in html and "rating-story-1" not in html and "+0.00" not in html
    assert "challenge (unrated)" in html.lower()
    history = client.get(reverse("web:competitor", args=[winner.pk])).content.decode()
    row = re.search(rf'href="/duels/{challenge.pk}/".*?</tr>', history, re.S).group(0)
    assert "unrated" in row and "+0.00" not in row


@override_settings(TM_MIN_DUEL_MATCHES=2, TM_MAX_DUEL_MATCHES=0)
def test_the_game_page_says_how_long_ladder_duels_really_are(client, env):
    html = client.get(reverse("web:game", args=[env.slug])).content.decode()
    lengths = re.search(r'data-testid="duel-lengths"[^>]*>(.*?)</span>', html, re.S).group(1)
    high = 4 * env.matches_per_duel  # tournament_manager.actions.DUEL_LENGTH_FACTOR
    assert (
        lengths == f"ladder duels of 2 to {high} matches; challenges and tournaments {env.matches_per_duel}"
    )
    assert f"{env.matches_per_duel} matches per duel" not in html
    home = client.get(reverse("web:home")).content.decode()
    assert "matches per duel" not in home and f"ladder duels of 2 to {high} matches" in home
    guide = client.get(reverse("web:guide")).content.decode()
    assert f"ladder 2\u2013{high}, others {env.matches_per_duel}" in guide


def test_matches_are_numbered_from_one_where_people_read_them(client, pair):
    duel = factories.duel(*pair, num_matches=2)
    html = client.get(reverse("web:duel", args=[duel.pk])).content.decode()
    numbers = re.findall(r'<tr data-testid="match-row"><td>(\d+)</td>', html)
    assert numbers == ["1", "2"]
    first = duel.matches.get(index=0)
    page = client.get(reverse("web:match", args=[first.pk])).content.decode()
    assert f"<title>Replay: match 1 of duel {duel.pk}" in page and "<h1>Match 1: " in page
    assert Match.objects.filter(duel=duel).count() == 2
