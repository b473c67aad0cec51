"""Management commands and the admin."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from core.actions import Claim, claim_duel, fail_duel, reject_revision, schedule_duel
from core.actions.jobs import db_in
from core.actions.workers import report_worker_status
from core.jobs import health
from core.management.commands.queue_status import duration
from core.models import Build, Competitor, Duel, Environment, Revision, WorkerStatus


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_sync_environments_mirrors_every_game_folder(db):
    from environments import all_slugs, get_info

    output = run("sync_environments")
    real = {slug for slug in all_slugs() if not get_info(slug).extra.get("synthetic")}
    assert set(Environment.objects.values_list("slug", flat=True)) == real
    assert "tic-tac-toe: created" in output
    assert "tic-tac-toe: unchanged" in run("sync_environments")


def test_synthetic_test_games_are_synced_only_on_request(db):
    run("sync_environments", "--include-synthetic")
    assert Environment.objects.get(slug="hidden-skill").is_active
    run("sync_environments")
    assert not Environment.objects.get(slug="hidden-skill").is_active


def test_a_game_that_disappeared_is_deactivated_not_deleted(environments):
    from core.actions import sync_environments
    from core.management.commands.sync_environments import game_infos

    report = sync_environments([i for i in game_infos() if i["slug"] != "quarto"])
    assert report["quarto"] == "deactivated"
    assert Environment.objects.get(slug="quarto").is_active is False


def test_load_example_players_submits_random_and_minimax_everywhere_once(environments):
    run("load_example_players", "--email", "demo@example.com")
    active = Environment.objects.filter(is_active=True).count()
    assert Revision.objects.count() == 2 * active
    assert set(Competitor.objects.values_list("name", flat=True)) == {"random", "minimax"}
    assert Build.objects.filter(state="QUEUED").count() == 2 * active
    run("load_example_players", "--email", "demo@example.com")
    assert Revision.objects.count() == 2 * active  # identical uploads are skipped


def fail_once(duel, reason="engine down"):
    """A worker claims ``duel`` and reports an infrastructure failure (re-queued or FAILED)."""
    assert fail_duel(duel.pk, reason, claim=Claim.of(claim_duel(duel.pk, "w")))


def test_queue_status_reports_counts_and_expired_leases(make_revision):
    duel = schedule_duel(make_revision(), make_revision())
    claim_duel(duel.pk, "w", lease_s=-1)
    status = json.loads(run("queue_status", "--json"))
    assert status["duel"]["states"] == {"RUNNING": 1}
    assert status["duel"]["expired_leases"] == 1
    assert "expired leases: 1" in run("queue_status")


def test_queue_status_lists_jobs_backing_off(make_revision, settings):
    settings.RETRY_BACKOFF_SECONDS = 600
    waiting, ready = (schedule_duel(make_revision(), make_revision()) for _ in range(2))
    fail_once(waiting, "the Docker engine does not answer")
    status = json.loads(run("queue_status", "--json"))["duel"]
    assert status["states"] == {"QUEUED": 2} and status["backing_off"] == 1
    [job] = status["backing_off_jobs"]
    assert (job["id"], job["attempts"]) == (waiting.pk, 1)
    assert 0 < job["claimable_in_s"] <= 600
    assert "the Docker engine does not answer" in job["last_failure"]
    assert ready.pk not in [j["id"] for j in status["backing_off_jobs"]]
    text = run("queue_status")
    assert "backing off: 1" in text and f"duel {waiting.pk} claimable in" in text


def test_queue_status_lists_each_workers_health_in_database_time(db, settings, monkeypatch, tmp_path):
    settings.SANDBOX = "local"
    assert health.probe_now() is None
    report_worker_status("good@host", healthy=True, problem="", queues=["celery"])
    settings.SANDBOX = "docker"
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")  # nothing listens there
    problem = health.probe_now()
    assert problem and "does not answer" in problem
    report_worker_status("bad@host", healthy=False, problem=problem, queues=["celery"])
    WorkerStatus.objects.filter(name="bad@host").update(last_seen=db_in(-90))
    workers = {w["name"]: w for w in json.loads(run("queue_status", "--json"))["workers"]}
    assert set(workers) == {"good@host", "bad@host"}
    assert (workers["good@host"]["healthy"], workers["good@host"]["problem"]) == (True, "")
    assert 0 <= workers["good@host"]["last_seen_s"] < 90
    assert (workers["bad@host"]["healthy"], workers["bad@host"]["problem"]) == (False, problem)
    assert 90 <= workers["bad@host"]["last_seen_s"] < 3600
    text = run("queue_status")
    assert "good@host: healthy; last seen" in text
    assert f"bad@host: unhealthy: {problem}; last seen 1 min " in text  # 90 s or a little more


def test_queue_status_writes_durations_for_people_never_none(make_revision):
    """Nothing queued read "oldest queued: Nones"; ages read "93.5s" whatever their size."""
    text = run("queue_status")
    assert "None" not in text
    assert "build      none; nothing queued;" in text
    duel = schedule_duel(make_revision(), make_revision())
    Duel.objects.filter(pk=duel.pk).update(enqueued_at=db_in(-3 * 3600 - 125))
    text = run("queue_status")
    assert "None" not in text
    assert "duel       QUEUED=1; oldest queued 3 h 2 min ago;" in text
    assert [duration(s) for s in (None, 4.25, 59.9, 60, 3725, 90061)] == [
        "-",
        "4.2 s",
        "59.9 s",
        "1 min 0 s",
        "1 h 2 min",
        "1 d 1 h",
    ]


def test_requeue_failed_gives_failed_duels_fresh_attempts(make_revision, settings):
    settings.MAX_ATTEMPTS = 1
    duel = schedule_duel(make_revision(), make_revision())
    fail_once(duel)
    assert Duel.objects.get(pk=duel.pk).state == "FAILED"
    assert "duel: 1" in run("requeue_failed")
    assert Duel.objects.values_list("state", "attempts").get(pk=duel.pk) == ("QUEUED", 0)


def test_rejecting_the_current_revision_falls_back_to_the_previous_eligible_one(make_revision):
    old = make_revision()
    new = make_revision(competitor=old.competitor)
    Competitor.objects.filter(pk=old.competitor_id).update(current_revision=new)
    reject_revision(new.pk, "plagiarism")
    assert Competitor.objects.get(pk=old.competitor_id).current_revision_id == old.pk
    assert Revision.objects.get(pk=new.pk).state == "REJECTED"


@pytest.mark.parametrize(
    "model",
    [
        "user",
        "environment",
        "competitor",
        "revision",
        "build",
        "smoketest",
        "duel",
        "match",
        "rating",
        "ratinghistory",
        "tournament",
        "workerstatus",
    ],
)
def test_admin_changelists_render(admin_client, make_revision, model):
    make_revision()
    report_worker_status(
        "w1@host", healthy=False, problem="the Docker engine does not answer", queues=["celery"]
    )
    assert admin_client.get(reverse(f"admin:core_{model}_changelist")).status_code == 200


def test_admin_shows_worker_health_read_only(admin_client, db):
    report_worker_status(
        "w1@host", healthy=False, problem="the Docker engine does not answer", queues=["celery"]
    )
    page = admin_client.get(reverse("admin:core_workerstatus_changelist")).content.decode()
    assert "w1@host" in page and "the Docker engine does not answer" in page
    worker = WorkerStatus.objects.get(name="w1@host")
    assert admin_client.get(reverse("admin:core_workerstatus_add")).status_code == 403
    assert admin_client.post(reverse("admin:core_workerstatus_delete", args=[worker.pk])).status_code == 403
    change = admin_client.post(reverse("admin:core_workerstatus_change", args=[worker.pk]), {"healthy": "on"})
    assert change.status_code == 403
    assert not WorkerStatus.objects.get(pk=worker.pk).healthy


def test_admin_job_pages_show_the_claim_and_retry_bookkeeping(admin_client, make_revision, settings):
    settings.RETRY_BACKOFF_SECONDS = 600
    duel = schedule_duel(make_revision(), make_revision())
    fail_once(duel)
    claim_duel(duel.pk, "w")  # refused: backing off
    listing = admin_client.get(reverse("admin:core_duel_changelist")).content.decode()
    for column in ("generation", "heartbeat at", "not before", "retry rounds"):
        assert column in listing.lower()
    page = admin_client.get(reverse("admin:core_duel_change", args=[duel.pk])).content.decode()
    for label in ("Generation", "Heartbeat at", "Not before", "Retry rounds"):
        assert label in page


def test_admin_action_requeues_a_failed_duel(admin_client, make_revision, settings):
    settings.MAX_ATTEMPTS = 1
    duel = schedule_duel(make_revision(), make_revision())
    fail_once(duel)
    response = admin_client.post(
        reverse("admin:core_duel_changelist"), {"action": "requeue", "_selected_action": [duel.pk]}
    )
    assert response.status_code == 302
    assert Duel.objects.get(pk=duel.pk).state == "QUEUED"


def test_admin_can_add_a_user_by_email(admin_client):
    from core.models import User

    assert admin_client.get(reverse("admin:core_user_add")).status_code == 200
    response = admin_client.post(
        reverse("admin:core_user_add"),
        {
            "email": "new@example.com",
            "password1": "a-long-pass-phrase-9",
            "password2": "a-long-pass-phrase-9",
        },
    )
    assert response.status_code == 302, response.content[:2000]
    user = User.objects.get(email="new@example.com")
    assert admin_client.get(reverse("admin:core_user_change", args=[user.pk])).status_code == 200


def test_pausing_a_competitor_keeps_the_reason_and_resuming_clears_it(make_revision):
    from core.actions import set_competitor_status

    competitor = make_revision().competitor
    set_competitor_status(competitor.pk, "PAUSED", "crashes too often")
    assert Competitor.objects.values_list("status", "pause_reason").get(pk=competitor.pk) == (
        "PAUSED",
        "crashes too often",
    )
    set_competitor_status(competitor.pk, "ACTIVE")
    assert Competitor.objects.values_list("status", "pause_reason").get(pk=competitor.pk) == ("ACTIVE", "")
