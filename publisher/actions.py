"""Publishing the sources of public, eligible revisions to a git repository.

Layout of the repository: ``<environment slug>/<owner>-<competitor>/`` holds the files of the
competitor's latest published revision; each revision is one commit whose message names the competitor,
version and environment and ends with a ``Revision-Id: <id>`` trailer. That trailer makes publishing
idempotent: a revision already in the history is only marked PUBLISHED, never committed twice.

A revision is published only if it is ELIGIBLE and both it and its competitor are public at the time of
publishing; otherwise its publish state goes back to PRIVATE. Failures leave it FAILED; the periodic
sweep retries FAILED revisions after ``PUBLISH_RETRY_SECONDS``.

Settings (all optional): ``PUBLISH_REMOTE`` (default: a bare repository ``DATA_DIR/public_submissions.git``,
created on first use), ``PUBLISH_BRANCH`` (``main``), ``PUBLISH_GIT_SSH_COMMAND``, ``PUBLISH_RETRY_SECONDS``
(600).
"""

from __future__ import annotations

import logging
import re
from datetime import timedelta
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import slugify

from core.models import Revision
from publisher.gitrepo import PublicRepo, PublishError, ensure_bare_repo

log = logging.getLogger(__name__)
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def remote_url() -> str:
    """The configured remote, creating the embedded default bare repository if needed."""
    remote = getattr(settings, "PUBLISH_REMOTE", "") or ""
    branch = getattr(settings, "PUBLISH_BRANCH", "main")
    if not remote:
        path = Path(settings.DATA_DIR) / "public_submissions.git"
        ensure_bare_repo(path, branch)
        return str(path)
    return remote


def working_repo() -> PublicRepo:
    """The publisher's working clone (under ``DATA_DIR/publisher/``)."""
    return PublicRepo(
        remote_url(),
        Path(settings.DATA_DIR) / "publisher" / "work",
        branch=getattr(settings, "PUBLISH_BRANCH", "main"),
        ssh_command=getattr(settings, "PUBLISH_GIT_SSH_COMMAND", None),
    )


def folder_for(revision: Revision) -> PurePosixPath:
    """``<environment slug>/<owner>-<competitor>`` for the revision's competitor (safe path parts)."""
    competitor = revision.competitor
    owner = slugify(competitor.owner.public_name) or f"user-{competitor.owner_id}"
    name = _SAFE.sub("-", competitor.name).strip(".-") or f"competitor-{competitor.pk}"
    return PurePosixPath(competitor.environment.slug, f"{owner}-{name}")


def commit_message(revision: Revision) -> str:
    """The commit message of a revision, ending with its ``Revision-Id`` trailer."""
    c = revision.competitor
    return (
        f"{c.name} v{revision.version} ({c.environment.slug}) by {c.owner.public_name}\n\n"
        f"Competitor: {c.name}\nVersion: {revision.version}\nEnvironment: {c.environment.slug}\n"
        f"{trailer(revision.pk)}\n"
    )


def trailer(revision_id: int) -> str:
    """The line identifying a revision's commit."""
    return f"Revision-Id: {revision_id}"


def is_publishable(revision: Revision) -> bool:
    """ELIGIBLE, and both the revision and its competitor public."""
    return revision.state == Revision.State.ELIGIBLE and revision.is_public and revision.competitor.is_public


def publish_revision(revision_id: int) -> str:
    """Publish one revision if it should be; returns its publish state afterwards.

    The revision row stays locked (``skip_locked``: a concurrent attempt returns at once) while the git
    work happens under the working clone's file lock, so one revision is never pushed twice.
    """
    with transaction.atomic():
        revision = (
            Revision.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("competitor__owner", "competitor__environment")
            .filter(pk=revision_id)
            .first()
        )
        if revision is None:
            return "BUSY"
        if revision.publish_state not in (Revision.PublishState.PENDING, Revision.PublishState.FAILED):
            return revision.publish_state
        if not is_publishable(revision):
            revision.publish_state = Revision.PublishState.PRIVATE
            revision.save(update_fields=["publish_state", "updated_at"])
            return revision.publish_state
        try:
            repo = working_repo()
            with repo.locked():
                repo.sync()
                if not repo.has_commit_with_trailer(trailer(revision.pk)):
                    repo.replace_folder(folder_for(revision), Path(settings.DATA_DIR) / revision.zip_path)
                    repo.commit_and_push(commit_message(revision))
        except PublishError as exc:
            log.warning("publishing revision %s failed: %s", revision.pk, exc)
            revision.publish_state = Revision.PublishState.FAILED
            revision.save(update_fields=["publish_state", "updated_at"])
            return revision.publish_state
        revision.publish_state = Revision.PublishState.PUBLISHED
        revision.save(update_fields=["publish_state", "updated_at"])
        log.info("published revision %s to %s", revision.pk, folder_for(revision))
        return revision.publish_state


def due_revisions() -> list[int]:
    """Revisions to publish now: PENDING ones, and FAILED ones whose last attempt is old enough."""
    retry_after = timedelta(seconds=getattr(settings, "PUBLISH_RETRY_SECONDS", 600))
    return list(
        Revision.objects.filter(
            Q(publish_state=Revision.PublishState.PENDING)
            | Q(publish_state=Revision.PublishState.FAILED, updated_at__lte=timezone.now() - retry_after)
        )
        .order_by("created_at", "pk")
        .values_list("pk", flat=True)
    )


def publish_due() -> dict[int, str]:
    """Publish every due revision in upload order; returns revision id -> resulting state."""
    return {revision_id: publish_revision(revision_id) for revision_id in due_revisions()}
