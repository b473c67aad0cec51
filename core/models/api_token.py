"""API tokens, stored as hashes: the key itself is shown once, when it is created, and never again."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """One key a program presents as ``Authorization: Token <key>``.

    Only ``digest`` (SHA-256 of the key, hex) is stored: the keys are 192 random bits, so a fast hash is
    as good as a slow one and a database dump reveals no usable key. ``prefix`` (the key's first
    characters) lets the owner tell tokens apart. A token past ``expires_at`` is refused; rotation
    deletes the old row and creates a new one.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the key, hex.")
    prefix = models.CharField(max_length=12, help_text="The key's first characters, to recognise it.")
    label = models.CharField(
        max_length=80, blank=True, help_text="Where it was made (profile, rl-arena login)."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="None: never expires.")
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["user", "-created_at"], name="core_apitoken_user_recent")]

    def __str__(self) -> str:
        return f"token {self.prefix}… of user {self.user_id}"
