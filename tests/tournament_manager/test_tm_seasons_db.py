"""A season from start to finals to archive, against PostgreSQL, through the Celery task.

The ladder is played and rated with the real actions; the season's end freezes submissions and seeds
the finals from the ladder; finals duels are recorded the way a worker records them; each call of the
``tournament_manager.check_seasons`` task (run through Celery, ``apply``) closes a round, cuts the
bottom, starts the next round, and finally archives the table that the season pages show.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from tm_factories import add_revision, play, record

from core.actions import SubmissionError, set_competitor_status, submit_revision
from core.actions.seasons import create_season, frozen_season
from core.models import Duel, Notification, Rating, Season, SeasonFinalist
from tournament_manager import seasons, tasks
from tournament_manager.actions import get_environment_rater
from tournament_manager.leaderboard import leaderboard
from tournament_manager.season_tasks import check_seasons

W1, W2 = "PLAYER_1_WIN", "PLAYER_2_WIN"


def run_check() -> int:
    """The periodic task, executed through Celery (eagerly, in this process)."""
    return check_seasons.apply().get()


def finals_duels(season, rnd):
    return list(
        Duel.objects.filter(season_finals__season=season, season_finals__round=rnd).select_related(
            "revision_1", "revision_2"
        )
    )


def play_round(season, rnd, finals_strength):
    """Record every duel of the round: the finalist stronger in the finals wins all four matches."""
    duels = finals_duels(season, rnd)
    for d in duels:
        s1, s2 = finals_strength[d.revision_1_id], finals_strength[d.revision_2_id]
        assert record(d.pk, [W1] * 4 if s1 > s2 else [W2] * 4)
    return duels


@pytest.mark.django_db
def test_a_season_freezes_seeds_finals_cuts_and_archives(hidden_env, make_competitor, settings, client):
    settings.SEASON_FINALISTS = 6
    settings.SEASON_FINALS_CUT = 0.5
    settings.SEASON_FINALS_LAST = 3

    # The ladder: eight competitors, bot0 strongest; every pair plays once and is rated.
    bots = [make_competitor(f"bot{k}") for k in range(8)]
    for i, a in enumerate(bots):
        for b in bots[i + 1 :]:
            play(a, b, [W1] * 4)
    tasks.rate_environment(hidden_env.pk)
    set_competitor_status(bots[0].pk, "PAUSED", "operator pause")  # paused: no finals despite its rank
    ladder = [r.competitor_id for r in leaderboard(hidden_env)]
    assert ladder[0] == bots[0].pk
    ratings = list(Rating.objects.filter(environment=hidden_env))
    ladder_mu = {r.competitor_id: r.mu for r in ratings}
    ladder_state = {r.competitor_id: (r.sigma, r.duels) for r in ratings}

    # The season ends now; a revision of bot1 that passed its smoke test after the end exists.
    now = timezone.now()
    season = create_season(hidden_env, "Spring", now - timedelta(days=30), now)  # every revision is older
    assert season.finalists == 6 and season.state == Season.State.OPEN
    before_end = season.ends_at - timedelta(minutes=1)
    assert frozen_season(hidden_env.pk, now=before_end) is None
    assert seasons.check_seasons(now=before_end) == 0
    frozen_revision = bots[1].current_revision
    late = add_revision(bots[1], tested_at=timezone.now() + timedelta(minutes=1))
    assert bots[1].current_revision_id == late.pk

    # End: submissions frozen, top 6 active competitors of the ladder seeded, round 1 scheduled.
    assert frozen_season(hidden_env.pk) == season
    with pytest.raises(SubmissionError, match="frozen"):
        submit_revision(bots[2].owner, hidden_env.slug, bots[2].name, b"not even read")
    assert run_check() == 1
    season.refresh_from_db()
    assert season.state == Season.State.FINALS and season.finals_round == 1
    banner = client.get(reverse("web:game", args=[hidden_env.slug])).content.decode()
    banner = banner.split('data-testid="season-banner"')[1].split("</p>")[0]
    assert "finals round 1 being played; submissions are frozen" in banner
    finalists = list(season.finalist_rows.order_by("seed"))
    expected = [c for c in ladder if c != bots[0].pk][:6]
    assert [f.competitor_id for f in finalists] == expected
    initial_sigma = get_environment_rater().initial().sigma
    for f in finalists:
        assert f.mu == pytest.approx(ladder_mu[f.competitor_id]) and f.sigma == pytest.approx(initial_sigma)
    by_competitor = {f.competitor_id: f for f in finalists}
    assert by_competitor[bots[1].pk].revision_id == frozen_revision.pk  # current at the end, not the late one

    # Round 1: a round robin of the six (15 FINALS duels, ahead of the ladder); the finals reverse the
    # ladder (the lowest seed is the strongest now).
    strength = {f.revision_id: f.seed for f in finalists}
    round1 = finals_duels(season, 1)
    assert len(round1) == 15 and all(d.kind == Duel.Kind.FINALS and d.priority > 0 for d in round1)
    pairs = {frozenset((d.revision_1_id, d.revision_2_id)) for d in round1}
    assert len(pairs) == 15 and {r for p in pairs for r in p} == set(strength)
    first = round1[0]
    assert record(
        first.pk, [W1] * 4 if strength[first.revision_1_id] > strength[first.revision_2_id] else [W2] * 4
    )
    assert run_check() == 0  # one duel played: the round is not over
    page = client.get(reverse("web:duel", args=[first.pk])).content.decode()
    season_link = reverse("web:season", args=[hidden_env.slug, season.pk])
    assert f'href="{season_link}" data-testid="duel-season">season finals, round 1<' in page
    assert "not on the ladder" in page and "Rating update pending" not in page
    live = client.get(reverse("web:season", args=[hidden_env.slug, season.pk])).content.decode()
    assert "Round 1: 1 of 15 duels played" in live and "submissions are frozen" in live
    assert 'data-testid="podium"' not in live and live.count(">playing<") == 6
    for d in round1[1:]:
        s1, s2 = strength[d.revision_1_id], strength[d.revision_2_id]
        assert record(d.pk, [W1] * 4 if s1 > s2 else [W2] * 4)

    # Cut after round 1: three go on, the three weakest in the finals are cut.
    assert run_check() == 1
    season.refresh_from_db()
    assert season.state == Season.State.FINALS and season.finals_round == 2
    rows = {f.seed: f for f in season.finalist_rows.all()}
    assert {seed for seed, f in rows.items() if f.cut_after_round == 1} == {1, 2, 3}
    survivors = [rows[s] for s in sorted(rows) if rows[s].cut_after_round is None]
    round2 = finals_duels(season, 2)
    assert len(round2) == 3
    assert {r for d in round2 for r in (d.revision_1_id, d.revision_2_id)} == {
        f.revision_id for f in survivors
    }
    assert all(f.matches > 0 for f in rows.values())

    # Round 2 (the last: three finalists), then the archive.
    play_round(season, 2, strength)
    assert run_check() == 1
    season.refresh_from_db()
    assert season.state == Season.State.FINISHED and season.finished_at is not None
    table = list(season.finalist_rows.order_by("final_rank"))
    assert [f.final_rank for f in table] == [1, 2, 3, 4, 5, 6]
    assert [f.cut_after_round for f in table[:3]] == [None, None, None]
    assert table[0].seed == 6 and table[1].seed == 5 and table[2].seed == 4  # the finals decided
    assert (table[0].wins, table[0].losses, table[0].matches) == (4 * 5 + 4 * 2, 0, 28)
    assert (table[5].wins, table[5].losses) == (0, 4 * 5)
    assert frozen_season(hidden_env.pk) is None  # submissions open again
    note = Notification.objects.get(user=table[0].competitor.owner, object_key=f"season:{season.pk}")
    assert "Spring" in note.subject and "rank 1 of 6" in note.body
    assert note.link == reverse("web:season", args=[hidden_env.slug, season.pk])
    assert Notification.objects.filter(object_key=f"season:{season.pk}").count() == 6
    assert not Notification.objects.filter(user=bots[0].owner, object_key=f"season:{season.pk}").exists()
    assert run_check() == 0  # an archived season stays as it is

    # The ladder never saw the finals: its ratings are unchanged after the finals duels went through it.
    assert tasks.rate_environment(hidden_env.pk) == 18
    for r in Rating.objects.filter(environment=hidden_env):
        assert r.mu == pytest.approx(ladder_mu[r.competitor_id])
        assert (r.sigma, r.duels) == ladder_state[r.competitor_id]

    # Pages: the list, the season (winner, podium, final table), the competitors' season results.
    winner, second, third = table[0], table[1], table[2]
    page = client.get(reverse("web:seasons", args=[hidden_env.slug]))
    assert page.status_code == 200
    html = page.content.decode()
    assert f'data-testid="season-row-{season.pk}"' in html and "Spring" in html
    assert winner.competitor.name in html
    page = client.get(reverse("web:season", args=[hidden_env.slug, season.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    podium = html.split('data-testid="podium"')[1].split("</section>")[0]
    assert podium.index(winner.competitor.name) < podium.index(second.competitor.name)
    assert podium.index(second.competitor.name) < podium.index(third.competitor.name)
    assert table[3].competitor.name not in podium
    final = html.split('data-testid="final-table"')[1]
    positions = [final.index(f'data-testid="finalist-{f.competitor_id}"') for f in table]
    assert positions == sorted(positions)
    assert "cut after round 1" in final and "Round 2: 3 of 3 duels played" in html
    assert bots[0].name not in final  # the paused competitor did not play
    page = client.get(reverse("web:competitor", args=[winner.competitor_id]))
    html = page.content.decode()
    row = html.split(f'data-testid="season-result-{season.pk}"')[1].split("</tr>")[0]
    assert "Spring" in html and ">1<" in row and "winner" in row
    page = client.get(reverse("web:competitor", args=[table[5].competitor_id]))
    row = page.content.decode().split(f'data-testid="season-result-{season.pk}"')[1].split("</tr>")[0]
    assert ">6<" in row and "cut after round 1" in row
    assert client.get(reverse("web:season", args=[hidden_env.slug, season.pk + 999])).status_code == 404
    client.force_login(bots[0].owner)  # signed in: the game page is rendered afresh, never a cached copy
    banner = client.get(reverse("web:game", args=[hidden_env.slug])).content.decode()
    banner = banner.split('data-testid="season-banner"')[1].split("</p>")[0]
    link = reverse("web:competitor", args=[winner.competitor_id])
    assert f'won by <a href="{link}">{winner.competitor.name}</a>' in banner


@pytest.mark.django_db
def test_seasons_of_a_game_never_overlap_and_a_season_without_two_players_archives_empty(
    hidden_env, make_competitor
):
    from core.actions import ActionError

    now = timezone.now()
    create_season(hidden_env, "A", now - timedelta(days=10), now - timedelta(days=1))
    with pytest.raises(ActionError, match="overlaps"):
        create_season(hidden_env, "B", now - timedelta(days=2), now + timedelta(days=5))
    with pytest.raises(ActionError):
        create_season(hidden_env, "C", now + timedelta(days=5), now + timedelta(days=4))
    make_competitor("alone")  # one playable competitor, not even rated: no finals
    assert run_check() == 1
    season = Season.objects.get(name="A")
    assert season.state == Season.State.FINISHED and not SeasonFinalist.objects.filter(season=season).exists()


@pytest.mark.django_db
def test_staff_create_seasons_in_the_admin_and_overlaps_are_refused(hidden_env, client, settings):
    from core.models import User

    settings.SEASON_FINALISTS = 12
    client.force_login(User.objects.create_superuser(email="ops@example.com", password="x" * 12))
    url = reverse("admin:core_season_add")

    def post(name, starts, ends):
        data = {"environment": hidden_env.pk, "name": name, "finalists": 5}
        for field, day in (("starts_at", starts), ("ends_at", ends)):
            data[f"{field}_0"], data[f"{field}_1"] = f"2030-01-{day:02d}", "12:00:00"
        data |= {"finalist_rows-TOTAL_FORMS": 0, "finalist_rows-INITIAL_FORMS": 0}
        return client.post(url, data)

    assert client.get(url).content.decode().count('value="12"') >= 1  # the operator's default count
    assert post("Winter", 1, 20).status_code == 302
    season = Season.objects.get(name="Winter")
    assert (season.finalists, season.state, season.ends_at.day) == (5, Season.State.OPEN, 20)
    page = post("Overlap", 10, 25)
    assert page.status_code == 200 and "overlaps" in page.content.decode()
    assert not Season.objects.filter(name="Overlap").exists()


def test_a_fresh_celery_app_registers_the_season_task_and_its_beat_entry():
    """What a worker and beat load on their own: the task module is found by ``core.celery``'s autodiscovery
    (a fresh interpreter: this test module's own import of ``season_tasks`` proves nothing)."""
    import os
    import subprocess
    import sys

    code = (
        "import django; django.setup()\n"
        "from core.celery import app\n"
        "app.loader.import_default_modules()\n"
        "print('tournament_manager.check_seasons' in app.tasks,"
        " app.conf.beat_schedule['tournament-manager-check-seasons']['task'])\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "core.settings"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "tournament_manager.check_seasons"]
