"""Notifications: stored once per event in the state change's transaction, mailed once after commit."""

from __future__ import annotations

import pytest
from django.core import mail
from django.db import transaction
from django.urls import reverse
from records_testlib import built_revision, drain_broker, run_email_tasks, uploaded_revision

from core.actions import (
    Claim,
    claim_build,
    claim_smoke_test,
    fail_build,
    finish_build,
    finish_smoke_test,
    mark_notifications_read,
    set_competitor_status,
)
from core.actions.notifications import notify_revision_failed
from core.models import Build, Duel, Notification, Revision, Tournament, TournamentParticipant, User
from tests.web import factories
from tournament_manager.actions import update_tournament_progress

pytestmark = pytest.mark.django_db


def _claim_build(rev: Revision) -> Claim:
    """The builder's claim on the revision's queued build."""
    build = claim_build(Build.objects.get(revision=rev).pk, "w1")
    assert build is not None
    return Claim.of(build)


def _fail_build(rev: Revision, claim: Claim | None = None) -> bool:
    """The build's outcome: the submission is at fault (claimed first unless ``claim`` is given)."""
    return finish_build(claim or _claim_build(rev), ok=False, error="pip could not install nosuchpackage")


def test_a_failed_build_notifies_its_owner_once_even_if_the_task_runs_twice(
    env, alice, django_capture_on_commit_callbacks
):
    rev = uploaded_revision(alice, env)
    claim = _claim_build(rev)
    with django_capture_on_commit_callbacks(execute=True):
        assert _fail_build(rev, claim) is True
    with django_capture_on_commit_callbacks(execute=True):
        assert _fail_build(rev, claim) is False  # the duplicate delivery changes nothing

    note = Notification.objects.get(user=alice)
    assert note.kind == Notification.Kind.REVISION_FAILED
    assert note.object_key == f"revision:{rev.pk}"
    assert "failed to build" in note.subject and "nosuchpackage" in note.body
    assert note.link == f"/revisions/{rev.pk}/"
    assert run_email_tasks() == 1
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["alice@example.com"]
    assert "failed to build" in mail.outbox[0].subject


def test_notifying_the_same_event_twice_stores_one_row_and_sends_one_mail(
    env, alice, django_capture_on_commit_callbacks
):
    rev = uploaded_revision(alice, env)
    Revision.objects.filter(pk=rev.pk).update(state=Revision.State.BUILD_FAILED, error_message="boom")
    rev.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        first = notify_revision_failed(rev)
        second = notify_revision_failed(rev)

    assert first is not None and second is None
    assert Notification.objects.filter(user=alice).count() == 1
    assert User.objects.get(pk=alice.pk).unread_notifications == 1
    assert run_email_tasks() == 1
    assert len(mail.outbox) == 1


def test_a_duplicate_email_message_sends_no_second_mail(env, alice, django_capture_on_commit_callbacks):
    from core.tasks import send_notification_email_task

    rev = uploaded_revision(alice, env)
    with django_capture_on_commit_callbacks(execute=True):
        _fail_build(rev)
    note = Notification.objects.get(user=alice)
    assert send_notification_email_task(note.pk) is True
    assert send_notification_email_task(note.pk) is False
    assert len(mail.outbox) == 1


def test_a_failed_smoke_test_notifies_its_owner(env, alice, django_capture_on_commit_callbacks):
    _rev, smoke = built_revision(alice, env)
    claim = Claim.of(claim_smoke_test(smoke.pk, "w1"))
    with django_capture_on_commit_callbacks(execute=True):
        assert finish_smoke_test(claim, passed=False, reason="INVALID_ACTION: player returned 9")
        assert not finish_smoke_test(claim, passed=False, reason="INVALID_ACTION: player returned 9")

    note = Notification.objects.get(user=alice)
    assert "failed its test" in note.subject
    assert "INVALID_ACTION" in note.body
    assert run_email_tasks() == 1


def test_an_infrastructure_failure_that_gives_up_notifies_the_owner(env, alice, settings):
    settings.MAX_ATTEMPTS = 1
    rev = uploaded_revision(alice, env)
    claim = _claim_build(rev)
    assert fail_build(claim.job_id, "docker daemon unreachable", claim=claim)  # its last attempt

    rev.refresh_from_db()
    assert Build.objects.get(pk=claim.job_id).state == Build.State.FAILED
    assert rev.state == Revision.State.BUILD_FAILED and "our side" in rev.error_message
    assert Notification.objects.filter(user=alice, object_key=f"revision:{rev.pk}").count() == 1


def test_a_rolled_back_failure_leaves_no_notification_and_no_message(env, alice):
    rev = uploaded_revision(alice, env)
    with pytest.raises(RuntimeError), transaction.atomic():
        _fail_build(rev)
        raise RuntimeError("the caller's transaction fails after the state change")

    assert not Notification.objects.exists()
    assert drain_broker() == []


def test_users_who_turned_email_off_are_notified_on_the_site_only(
    env, alice, django_capture_on_commit_callbacks
):
    User.objects.filter(pk=alice.pk).update(email_notifications=False)
    rev = uploaded_revision(alice, env)
    with django_capture_on_commit_callbacks(execute=True):
        _fail_build(rev)

    assert Notification.objects.filter(user=alice).count() == 1
    assert run_email_tasks() == 0
    assert mail.outbox == []


def test_a_mail_failure_does_not_roll_back_the_state_change(
    env, alice, settings, django_capture_on_commit_callbacks
):
    # A real SMTP backend pointed at a port where nothing listens: sending fails with a connection error.
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_USE_TLS, settings.EMAIL_TIMEOUT = (
        "127.0.0.1",
        1,
        False,
        2,
    )
    rev = uploaded_revision(alice, env)
    with django_capture_on_commit_callbacks(execute=True):
        assert _fail_build(rev) is True
    assert run_email_tasks() == 1  # the task ran and failed to send

    rev.refresh_from_db()
    assert rev.state == Revision.State.BUILD_FAILED
    note = Notification.objects.get(user=alice)
    assert note.email_sent_at is None and note.email_error
    assert mail.outbox == []


def test_pausing_a_competitor_notifies_once_per_pause(alice, django_capture_on_commit_callbacks):
    comp = factories.competitor(owner=alice)
    with django_capture_on_commit_callbacks(execute=True):
        set_competitor_status(comp.pk, "PAUSED", "5 errors in a row: TIMEOUT")
        set_competitor_status(comp.pk, "PAUSED", "5 errors in a row: TIMEOUT")
    assert Notification.objects.filter(user=alice, kind="COMPETITOR_PAUSED").count() == 1

    with django_capture_on_commit_callbacks(execute=True):
        set_competitor_status(comp.pk, "ACTIVE")
        set_competitor_status(comp.pk, "PAUSED", "crashed again")

    notes = list(Notification.objects.filter(user=alice, kind="COMPETITOR_PAUSED").order_by("pk"))
    assert [n.body for n in notes] == ["5 errors in a row: TIMEOUT", "crashed again"]
    assert run_email_tasks() == 2


def _finished_edition(env, comps):
    t = Tournament.objects.create(environment=env, edition=1, state=Tournament.State.RUNNING, duels_total=3)
    for c in comps:
        TournamentParticipant.objects.create(tournament=t, revision=c.current_revision)
    for i, a in enumerate(comps):
        for b in comps[i + 1 :]:
            d = factories.duel(a, b, num_matches=2)
            Duel.objects.filter(pk=d.pk).update(tournament=t, kind=Duel.Kind.TOURNAMENT)
    return t


def test_the_end_of_a_tournament_notifies_each_owner_once(
    env, alice, bob, django_capture_on_commit_callbacks
):
    comps = [
        factories.competitor(owner=alice),
        factories.competitor(owner=alice),
        factories.competitor(owner=bob),
    ]
    t = _finished_edition(env, comps)
    with django_capture_on_commit_callbacks(execute=True):
        assert update_tournament_progress(t.pk).state == Tournament.State.FINISHED
        update_tournament_progress(t.pk)

    alice_notes = Notification.objects.filter(user=alice, kind="TOURNAMENT_FINISHED")
    assert alice_notes.count() == 1
    assert alice_notes.get().body.count("rank") == 2  # both of her competitors, in one message
    assert Notification.objects.filter(user=bob, kind="TOURNAMENT_FINISHED").count() == 1
    assert run_email_tasks() == 2
    assert sorted(m.to[0] for m in mail.outbox) == ["alice@example.com", "bob@example.com"]


def test_the_header_shows_the_unread_count_without_extra_queries(
    client, env, alice, django_assert_max_num_queries
):
    for i in range(3):
        rev = uploaded_revision(alice, env, name=f"bot-{i}")
        _fail_build(rev)
    client.force_login(alice)

    with django_assert_max_num_queries(8):
        page = client.get(reverse("web:notifications"))
    html = page.content.decode()
    assert page.status_code == 200
    assert '3<span class="visually-hidden"> unread</span>' in html  # read out as "3 unread"
    assert html.count('class="notification unread"') == 3

    home = client.get(reverse("web:home")).content.decode()
    assert '3<span class="visually-hidden"> unread</span>' in home


def test_marking_notifications_read_clears_the_badge(client, env, alice):
    revs = [uploaded_revision(alice, env, name=f"bot-{i}") for i in range(2)]
    for rev in revs:
        _fail_build(rev)
    client.force_login(alice)
    first = Notification.objects.filter(user=alice).order_by("pk").first()

    client.post(reverse("web:notifications-read"), {"id": first.pk})
    assert User.objects.get(pk=alice.pk).unread_notifications == 1
    page = client.post(reverse("web:notifications-read"), follow=True).content.decode()
    assert "unread" not in page.split("<main", 1)[0]  # no badge in the header any more
    assert not Notification.objects.filter(user=alice, read_at__isnull=True).exists()
    assert User.objects.get(pk=alice.pk).unread_notifications == 0


def test_nobody_can_mark_someone_elses_notifications(env, alice, bob):
    _fail_build(uploaded_revision(alice, env))
    note = Notification.objects.get(user=alice)
    assert mark_notifications_read(bob, [note.pk]) == 0
    note.refresh_from_db()
    assert note.read_at is None


def test_the_profile_turns_email_notifications_off(client, alice):
    client.force_login(alice)
    form = {"display_name": "Alice", "team": "", "github": ""}  # the checkbox left unticked
    response = client.post(reverse("web:profile"), form)
    assert response.status_code == 302
    assert User.objects.get(pk=alice.pk).email_notifications is False
    client.post(reverse("web:profile"), {**form, "email_notifications": "on"})
    assert User.objects.get(pk=alice.pk).email_notifications is True
