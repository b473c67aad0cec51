"""Notifications: created inside the transaction of the state change they report, mailed after commit.

Each event is stored at most once per (user, kind, object key) — a unique constraint, so a task that
runs twice (or two racing workers) cannot notify twice. The e-mail is a separate Celery task,
``core.send_notification_email``, sent by name with ``enqueue_on_commit``: a rolled-back change sends
nothing, and a mail failure happens after the state change has committed, so it can never undo it.

``User.unread_notifications`` is kept in step with the rows (same transaction), so the header badge
costs no query.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from core.models import Competitor, Notification, Revision, Tournament, TournamentParticipant, User
from core.queue import enqueue_on_commit

log = logging.getLogger(__name__)

EMAIL_TASK = "core.send_notification_email"


def notify(
    user_id: int, kind: str, object_key: str, subject: str, body: str = "", link: str = ""
) -> Notification | None:
    """Store a notification for ``user_id`` unless this (kind, object key) was already told; queue its
    e-mail after commit when the user wants e-mail. Returns the new row, or ``None`` if it existed.

    Call it inside the transaction of the state change it reports."""
    with transaction.atomic():  # a savepoint: a duplicate leaves the caller's transaction usable
        try:
            with transaction.atomic():
                note = Notification.objects.create(
                    user_id=user_id,
                    kind=kind,
                    object_key=object_key,
                    subject=subject[:200],
                    body=body,
                    link=link[:300],
                )
        except IntegrityError:
            return None
        User.objects.filter(pk=user_id).update(unread_notifications=F("unread_notifications") + 1)
        wants_mail = User.objects.filter(pk=user_id, email_notifications=True).exclude(email="").exists()
    if wants_mail:
        enqueue_on_commit(EMAIL_TASK, note.pk)
    return note


def notify_revision_failed(revision: Revision) -> Notification | None:
    """Tell a revision's owner that it failed to build or failed its smoke test (``revision.state`` and
    ``revision.error_message`` are already set)."""
    competitor = Competitor.objects.select_related("environment").get(pk=revision.competitor_id)
    what = "failed to build" if revision.state == Revision.State.BUILD_FAILED else "failed its test"
    return notify(
        competitor.owner_id,
        Notification.Kind.REVISION_FAILED,
        f"revision:{revision.pk}",
        f"{competitor.name} v{revision.version} ({competitor.environment.name}) {what}",
        revision.error_message,
        f"/revisions/{revision.pk}/",
    )


def notify_competitor_paused(competitor: Competitor) -> Notification | None:
    """Tell a competitor's owner it was paused (call under the competitor's row lock, after the change).

    Pauses are numbered per competitor, so pausing again after a resume is a new event while a repeated
    pause of the same episode is not."""
    prefix = f"competitor:{competitor.pk}:pause:"
    earlier = Notification.objects.filter(
        user_id=competitor.owner_id, kind=Notification.Kind.COMPETITOR_PAUSED, object_key__startswith=prefix
    ).count()
    return notify(
        competitor.owner_id,
        Notification.Kind.COMPETITOR_PAUSED,
        f"{prefix}{earlier + 1}",
        f"{competitor.name} was paused and no longer plays",
        competitor.pause_reason or "It was paused by an operator.",
        f"/competitors/{competitor.pk}/",
    )


def notify_tournament_finished(tournament: Tournament) -> int:
    """Tell every owner whose revisions played in ``tournament`` that it ended, with their ranks.
    One notification per owner; returns how many were created."""
    rows = (
        TournamentParticipant.objects.filter(tournament=tournament)
        .select_related("revision__competitor", "tournament__environment")
        .order_by("rank", "pk")
    )
    by_owner: dict[int, list[TournamentParticipant]] = {}
    for p in rows:
        by_owner.setdefault(p.revision.competitor.owner_id, []).append(p)
    total = len(rows)
    env_name = tournament.environment.name
    created = 0
    for owner_id, entries in sorted(by_owner.items()):
        lines = [
            f"{p.revision.competitor.name} v{p.revision.version}: rank {p.rank or '-'} of {total}, "
            f"{p.points} points ({p.wins} won, {p.draws} drawn, {p.losses} lost, {p.errors} errors)"
            for p in entries
        ]
        note = notify(
            owner_id,
            Notification.Kind.TOURNAMENT_FINISHED,
            f"tournament:{tournament.pk}",
            f"{env_name} tournament #{tournament.edition} has ended",
            "\n".join(lines),
            f"/games/{tournament.environment.slug}/",
        )
        created += note is not None
    return created


def mark_notifications_read(user: User, ids: list[int] | None = None) -> int:
    """Mark ``user``'s unread notifications (all, or those in ``ids``) read; returns how many changed."""
    with transaction.atomic():
        locked = User.objects.select_for_update().get(pk=user.pk)
        unread = Notification.objects.filter(user=locked, read_at__isnull=True)
        if ids is not None:
            unread = unread.filter(pk__in=ids)
        changed = unread.update(read_at=timezone.now())
        remaining = Notification.objects.filter(user=locked, read_at__isnull=True).count()
        User.objects.filter(pk=user.pk).update(unread_notifications=remaining)
    user.unread_notifications = remaining
    return changed


def send_notification_email(notification_id: int) -> bool:
    """Mail one notification (the body of the ``core.send_notification_email`` task). Claims it with a
    conditional UPDATE first, so a duplicate delivery sends nothing. A sending failure is recorded in
    ``email_error`` and un-claims it; it never touches the state change that caused the notification.
    Returns whether a mail was sent."""
    note = Notification.objects.select_related("user").filter(pk=notification_id).first()
    if note is None or not note.user.email_notifications or not note.user.email:
        return False
    now = timezone.now()
    claimed = Notification.objects.filter(pk=notification_id, email_sent_at__isnull=True).update(
        email_sent_at=now, email_error=""
    )
    if not claimed:
        return False
    link = f"{_site_url().rstrip('/')}{note.link}" if note.link else ""
    body = f"{note.body}\n\n{link}\n" if link else note.body
    body += "\nYou can turn these e-mails off on your profile page.\n"
    try:
        send_mail(f"[RL Arena] {note.subject}", body, settings.DEFAULT_FROM_EMAIL, [note.user.email])
    except Exception as exc:  # SMTP down, bad address, ...: keep the notification, report the failure
        log.warning("could not mail notification %s: %s", notification_id, exc)
        Notification.objects.filter(pk=notification_id).update(
            email_sent_at=None, email_error=str(exc)[:2000]
        )
        return False
    return True


def _site_url() -> str:
    return str(getattr(settings, "SITE_URL", "") or "")
