"""State changes of API tokens: create (the key is returned once), rotate, revoke, and the lookup that
authenticates a request (``core.models.ApiToken`` stores only the key's SHA-256)."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.models import ApiToken

#: Every key starts with this, so a leaked one is easy to recognise (secret scanners, logs).
KEY_PREFIX = "rla_"
#: Tokens kept per user; creating one more deletes the oldest.
MAX_TOKENS_PER_USER = 10
#: ``last_used_at`` is written at most this often per token (not on every request).
LAST_USED_RESOLUTION = timedelta(minutes=5)


class TokenExpiredError(Exception):
    """The key matched a token whose time is over."""


def digest(key: str) -> str:
    """SHA-256 of ``key``, hex: what is stored and looked up."""
    return hashlib.sha256(key.encode()).hexdigest()


def _expiry(now: datetime) -> datetime | None:
    days = int(getattr(settings, "API_TOKEN_DAYS", 90))
    return now + timedelta(days=days) if days > 0 else None


def create_api_token(user: Any, label: str = "") -> tuple[str, ApiToken]:
    """A new token for ``user``: ``(key, row)``. The key is not stored; show it now or never."""
    key = KEY_PREFIX + secrets.token_urlsafe(27)  # 40 characters, 216 random bits
    with transaction.atomic():
        token = ApiToken.objects.create(
            user=user,
            digest=digest(key),
            prefix=key[: len(KEY_PREFIX) + 4],
            label=label[:80],
            expires_at=_expiry(timezone.now()),
        )
        keep = ApiToken.objects.filter(user=user).order_by("-created_at", "-pk")[:MAX_TOKENS_PER_USER]
        ApiToken.objects.filter(user=user).exclude(pk__in=list(keep.values_list("pk", flat=True))).delete()
    return key, token


def rotate_api_token(user: Any, current: ApiToken | None = None, label: str = "") -> tuple[str, ApiToken]:
    """Replace ``current`` (the token a program authenticated with) by a new one, or, without it, all of
    ``user``'s tokens (the profile's "replace"). The old keys stop working at once."""
    with transaction.atomic():
        old = ApiToken.objects.filter(user=user)
        if current is not None:
            old = old.filter(pk=current.pk)
            label = label or current.label
        old.delete()
        return create_api_token(user, label)


def revoke_api_token(user: Any, token_id: int) -> bool:
    """Delete one of ``user``'s tokens; ``False`` if it was not theirs (or is gone)."""
    with transaction.atomic():
        deleted, _ = ApiToken.objects.filter(user=user, pk=token_id).delete()
    return deleted > 0


def user_for_key(key: str) -> tuple[Any, ApiToken] | None:
    """The active user and token a key belongs to; ``None`` for an unknown key or an inactive user.
    Raises ``TokenExpiredError`` for an expired one. Notes the use (at most every few minutes)."""
    token = ApiToken.objects.select_related("user").filter(digest=digest(key)).first()
    if token is None or not token.user.is_active:
        return None
    now = timezone.now()
    if token.expires_at is not None and token.expires_at <= now:
        raise TokenExpiredError(f"This token expired on {token.expires_at:%Y-%m-%d}.")
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user, token
