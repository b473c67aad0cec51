"""State changes of accounts: sign-up, profile (API tokens: ``core.actions.api_tokens``; login
throttling: ``core.actions.login_throttle``)."""

from __future__ import annotations

from django.db import transaction

from core.models.user import User


def register_user(
    email: str, password: str, display_name: str = "", team: str = "", github: str = ""
) -> User:
    """Create a regular (non-staff) account; the e-mail address is stored lower-cased."""
    with transaction.atomic():
        return User.objects.create_user(
            email=email, password=password, display_name=display_name, team=team, github=github
        )


def update_profile(
    user: User, display_name: str, team: str, github: str, email_notifications: bool | None = None
) -> User:
    """Change the public profile fields of ``user`` (and, when given, whether notifications are mailed)."""
    extra = {} if email_notifications is None else {"email_notifications": email_notifications}
    with transaction.atomic():
        User.objects.filter(pk=user.pk).update(display_name=display_name, team=team, github=github, **extra)
        user.display_name, user.team, user.github = display_name, team, github
        if email_notifications is not None:
            user.email_notifications = email_notifications
    return user
