"""Retention prunes what the operator chose and keeps results, ratings and working replays."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from core.models import Duel, Match, Rating, Revision
from ops.retention import prune
from tests.web import factories

pytestmark = pytest.mark.django_db

DAY = 86400


def _replay_pages(client, duel: Duel) -> list[tuple[str, dict]]:
    """Each match page: its HTML around the replay data, and the replay data (states, moves) parsed."""
    pages = []
    for match in duel.matches.order_by("index"):
        response = client.get(reverse("web:match", args=[match.pk]))
        assert response.status_code == 200
        html = response.content.decode()
        start = html.index('<script id="replay-data" type="application/json">')
        end = html.index("</script>", start)
        data = json.loads(html[start:end].split(">", 1)[1])
        pages.append((html[:start] + html[end:], data))
    assert all(data["states"] for _, data in pages)
    return pages


def test_old_match_states_are_pruned_and_their_replays_still_play(client, settings, env, alice, bob, capsys):
    settings.RETENTION_MATCH_STATES_DAYS = 7
    a, b = factories.competitor(alice, env, "a"), factories.competitor(bob, env, "b")
    old = factories.duel(a, b, num_matches=3, finished_ago_s=10 * DAY, initial_state=False)
    recent = factories.duel(a, b, num_matches=2, finished_ago_s=DAY, initial_state=False)
    pages = _replay_pages(client, old)
    recent_states = sorted(recent.matches.values_list("id", "states"))

    call_command("prune_data", "--dry-run")
    assert "would prune: 3 match states pruned" in capsys.readouterr().out
    assert all(m.states for m in old.matches.all())  # a dry run changes nothing

    report = prune()
    assert report.match_states_pruned == 3 and report.bytes_freed > 0
    assert [m.states for m in old.matches.all()] == [[], [], []]
    assert all(m.actions for m in old.matches.all())
    assert sorted(recent.matches.values_list("id", "states")) == recent_states
    assert _replay_pages(client, old) == pages  # the viewer replays the actions through the rules
    assert prune().match_states_pruned == 0  # idempotent


def test_a_chance_game_keeps_its_deal(client, settings, alice, bob):
    settings.RETENTION_MATCH_STATES_DAYS = 7
    leduc = factories.environment("leduc-holdem")
    a, b = factories.competitor(alice, leduc, "a"), factories.competitor(bob, leduc, "b")
    old = factories.duel(
        a, b, num_matches=2, finished_ago_s=10 * DAY
    )  # initial state (the deal) stored first
    pages = _replay_pages(client, old)
    before = {m.pk: m.states for m in old.matches.all()}
    prune()
    for match in old.matches.all():
        if len(match.actions) > 1:
            assert match.states == before[match.pk][:1]
    assert _replay_pages(client, old) == pages


def test_replays_of_retired_revisions_go_results_and_ratings_stay(settings, env, alice, bob):
    settings.RETENTION_RETIRED_REPLAYS_DAYS = 30
    a, b = factories.competitor(alice, env, "a"), factories.competitor(bob, env, "b")
    factories.rate(a, 27.0, 3.0)
    old = factories.duel(a, b, num_matches=2, finished_ago_s=40 * DAY)
    kept_while_current = prune()
    assert kept_while_current.replays_deleted == 0  # both still play: their replays stay

    for comp in (a, b):
        factories.revision(comp)  # a newer current revision: the old one retires
    ratings = sorted(Rating.objects.values_list("competitor_id", "mu", "sigma"))
    results = list(old.matches.order_by("index").values_list("result", "player_1_score", "player_2_score"))
    report = prune()
    assert report.replays_deleted == 2
    assert [(m.states, m.actions, m.move_times) for m in old.matches.all()] == [([], [], [])] * 2
    assert list(old.matches.values_list("packed_moves", flat=True)) == [b"", b""]  # nothing left
    assert (
        list(old.matches.order_by("index").values_list("result", "player_1_score", "player_2_score"))
        == results
    )
    assert sorted(Rating.objects.values_list("competitor_id", "mu", "sigma")) == ratings
    Duel.objects.get(pk=old.pk)


def test_only_unplayable_zips_are_deleted(settings, data_dir, env, alice):
    settings.RETENTION_UNPLAYABLE_ZIPS_DAYS = 14
    comp = factories.competitor(alice, env, "a", state=Revision.State.TEST_FAILED)
    failed = comp.revisions.get()
    superseded_pending = factories.revision(comp)
    current = factories.revision(comp)
    Revision.objects.filter(pk=superseded_pending.pk).update(publish_state=Revision.PublishState.PENDING)
    young_failed = factories.revision(comp, state=Revision.State.BUILD_FAILED)
    Revision.objects.exclude(pk=young_failed.pk).update(created_at=timezone.now() - timedelta(days=20))
    for rev in Revision.objects.all():
        path = data_dir / rev.zip_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"PK\x05\x06" + bytes(18))

    assert prune(dry_run=True).zips_deleted == 1
    assert (data_dir / failed.zip_path).exists()
    report = prune()
    assert report.zips_deleted == 1
    assert not (data_dir / failed.zip_path).exists()
    for kept in (superseded_pending, current, young_failed):  # to publish, playing, too recent
        assert (data_dir / kept.zip_path).exists()


def test_nothing_is_pruned_while_retention_is_off(settings, env, alice, bob, capsys):
    a, b = factories.competitor(alice, env, "a"), factories.competitor(bob, env, "b")
    factories.duel(a, b, num_matches=2, finished_ago_s=400 * DAY, initial_state=False)
    call_command("prune_data")
    assert "retention is off" in capsys.readouterr().out
    assert prune().match_states_pruned == 0
    assert all(m.states for m in Match.objects.all())


def test_the_beat_runs_retention_only_when_it_is_on(tmp_path):
    import os
    import subprocess
    import sys

    script = (
        "from core.celery import app; app.loader.import_default_modules();"
        " print('ops.prune_data' in app.tasks, 'ops-prune-data' in app.conf.beat_schedule)"
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith("RETENTION_")}
    base.update(DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="core.settings")
    base.pop("DATABASE_URL", None)
    off = subprocess.run(
        [sys.executable, "-c", script], env=base, capture_output=True, text=True, timeout=120
    )
    assert off.stdout.split() == ["True", "False"], off.stderr
    on = subprocess.run(
        [sys.executable, "-c", script],
        env={**base, "RETENTION_MATCH_STATES_DAYS": "30"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert on.stdout.split() == ["True", "True"], on.stderr
