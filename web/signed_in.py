"""The signed-in user of a request, typed: views behind ``login_required`` (or DRF's ``IsAuthenticated``)
know ``request.user`` is a ``User``; this says so to the type checker, and fails loudly if it is not."""

from __future__ import annotations

from typing import Any

from core.models import User


def signed_in(request: Any) -> User:
    """``request.user`` of a view that only signed-in users reach (a Django or a DRF request)."""
    user = request.user
    if not isinstance(user, User):
        raise TypeError("this view is only for signed-in users: guard it with login_required")
    return user
