"""``Authorization: Token <key>`` against hashed keys (``core.actions.api_tokens``)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from core.actions.api_tokens import TokenExpiredError, user_for_key


class HashedTokenAuthentication(authentication.BaseAuthentication):
    """Looks the key's SHA-256 up; expired and unknown keys get 401 (``WWW-Authenticate: Token``).
    ``request.auth`` is the ``ApiToken`` row (the rotate endpoint replaces that one)."""

    keyword = "Token"

    def authenticate(self, request: Any) -> tuple[Any, Any] | None:
        """``None`` without a token header (other authenticators may apply)."""
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Send 'Authorization: Token <key>' (one key, no spaces).")
        try:
            key = header[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        try:
            found = user_for_key(key)
        except TokenExpiredError as exc:
            raise exceptions.AuthenticationFailed(f"{exc} Log in again (rl-arena login).") from None
        if found is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        return found

    def authenticate_header(self, request: Any) -> str:
        """Makes DRF answer 401 (not 403) to a bad token."""
        return self.keyword


class HashedTokenScheme(OpenApiAuthenticationExtension):
    """Describes the token header in the OpenAPI schema (registered by being defined)."""

    target_class = "web.api.authentication.HashedTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        """``Authorization: Token <key>``."""
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": 'A key from POST /api/auth/token/ or the profile page, sent as "Token <key>".',
        }
