"""Users log in with their e-mail address."""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib.auth.models import AbstractUser, BaseUserManager
from django.db import models
from django.db.models.functions import Lower


class UserManager(BaseUserManager["User"]):
    """Creates users keyed by a normalised (lower-cased) e-mail address."""

    use_in_migrations = True

    def _create(self, email: str, password: str | None, **extra: Any) -> User:
        if not email:
            raise ValueError("an e-mail address is required")
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_user(self, email: str, password: str | None = None, **extra: Any) -> User:
        """A regular user."""
        extra.setdefault("is_staff", False)
        extra.setdefault("is_superuser", False)
        return self._create(email, password, **extra)

    def create_superuser(self, email: str, password: str | None = None, **extra: Any) -> User:
        """A staff superuser (admin access)."""
        extra["is_staff"] = True
        extra["is_superuser"] = True
        return self._create(email, password, **extra)


_NAME_ADJECTIVES = (
    "Amber", "Brave", "Calm", "Clever", "Curious", "Daring", "Eager", "Gentle", "Golden", "Happy",
    "Jolly", "Keen", "Lively", "Lucky", "Merry", "Nimble", "Patient", "Quick", "Quiet", "Rapid",
    "Silver", "Steady", "Swift", "Witty",
)  # fmt: skip
_NAME_ANIMALS = (
    "Badger", "Beaver", "Crane", "Dolphin", "Falcon", "Ferret", "Fox", "Gecko", "Hare", "Heron",
    "Ibis", "Jaguar", "Koala", "Lynx", "Marten", "Otter", "Owl", "Panda", "Puffin", "Raven",
    "Robin", "Seal", "Tiger", "Wombat",
)  # fmt: skip


def default_public_name(pk: int) -> str:
    """The name of an account that chose none, e.g. ``"Swift Otter 7"``: two words picked from its number
    (the number keeps two such accounts apart), friendlier than ``user-7`` and never from the e-mail."""
    n = len(_NAME_ADJECTIVES)
    mixed = (pk * 2654435761) % (n * len(_NAME_ANIMALS))  # neighbours get unlike names
    return f"{_NAME_ADJECTIVES[mixed % n]} {_NAME_ANIMALS[mixed // n]} {pk}"


class User(AbstractUser):
    """A person who uploads agents. ``email`` is the login; there is no username."""

    username = None  # type: ignore[assignment]
    email = models.EmailField("e-mail address", unique=True)
    display_name = models.CharField(max_length=80, blank=True)
    team = models.CharField(max_length=80, blank=True)
    github = models.CharField(max_length=39, blank=True, help_text="GitHub user name.")
    email_notifications = models.BooleanField(
        default=True, help_text="Also send notifications (failed revisions, pauses, tournaments) by e-mail."
    )
    unread_notifications = models.PositiveIntegerField(
        default=0, help_text="Count of unread notifications (kept by core.actions.notifications)."
    )

    USERNAME_FIELD = "email"
    REQUIRED_FIELDS: ClassVar[list[str]] = []

    # Not auth's UserManager (which creates users by username), so not the type AbstractUser declares.
    objects: ClassVar[UserManager] = UserManager()  # type: ignore[assignment]

    class Meta:
        constraints = [models.UniqueConstraint(Lower("email"), name="core_user_email_ci_unique")]

    def __str__(self) -> str:
        return self.display_name or self.email

    @property
    def public_name(self) -> str:
        """The name shown to others (header, leaderboards, duels, live games; never the e-mail address):
        the display name, else the GitHub user name given at sign-up, else a name of two words picked from
        the account's number (``default_public_name``), the same on every page."""
        return self.display_name or self.github or default_public_name(self.pk or 0)
