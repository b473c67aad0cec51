"""Core's own Celery task: mailing a notification after the change that caused it has committed."""

from __future__ import annotations

from celery import shared_task

from core.actions.notifications import EMAIL_TASK, send_notification_email


@shared_task(name=EMAIL_TASK, ignore_result=True)
def send_notification_email_task(notification_id: int) -> bool:
    """Send notification ``notification_id`` by e-mail (a no-op if already sent or opted out)."""
    return send_notification_email(notification_id)
