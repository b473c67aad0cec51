"""Publishing the sources of public, eligible revisions to a git repository.

Layout of the repository: ``<environment slug>/competitor-<competitor id>/`` holds the files of the
competitor's latest published revision; each revision is one commit whose message and trailers
(``Competitor-Id``, ``Version``, ``Environment``, ``Revision-Id``) are made of ids and the operator's
environment slug only. No user text (display name, competitor name) reaches a path or a commit message:
two owners can never share a folder, and no name can forge a trailer. The ``Revision-Id`` trailer, parsed
by git and compared exactly, makes publishing idempotent: a revision already in the history is only marked
PUBLISHED, never committed twice.

A revision is published only if it is ELIGIBLE and both it and its competitor are public at the time of
publishing; otherwise its publish state goes back to PRIVATE. Failures leave it FAILED; the periodic
sweep retries FAILED revisions after ``PUBLISH_RETRY_SECONDS``. A revision whose own files cannot be
published (a path git refuses such as ``.GIT/``, a link, too large, a corrupt zip: ``PublishRefused``) is
REFUSED, with the reason logged, and never retried.

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

from core import blobs
from core.models import Revision
from publisher.gitrepo import REVISION_TRAILER, PublicRepo, PublishError, PublishRefused, ensure_bare_repo

log = logging.getLogger(__name__)
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


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


def _environment_part(revision: Revision) -> str:
    """The environment's slug (operator data), or its id should the slug ever not be a plain slug."""
    environment = revision.competitor.environment
    return environment.slug if _SLUG.match(environment.slug) else f"environment-{environment.pk}"


def folder_for(revision: Revision) -> PurePosixPath:
    """``<environment slug>/competitor-<id>``: unique per competitor, whatever its owner and name."""
    return PurePosixPath(_environment_part(revision), f"competitor-{revision.competitor_id}")


def commit_message(revision: Revision) -> str:
    """The commit message of a revision: ids only, ending with the trailers (``Revision-Id`` last)."""
    environment = _environment_part(revision)
    return (
        f"Publish revision {revision.pk}: competitor {revision.competitor_id} v{revision.version} "
        f"({environment})\n\n"
        f"Competitor-Id: {revision.competitor_id}\nVersion: {revision.version}\nEnvironment: {environment}\n"
        f"{trailer(revision.pk)}\n"
    )


def trailer(revision_id: int) -> str:
    """The trailer line identifying a revision's commit."""
    return f"{REVISION_TRAILER}: {revision_id}"


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
                if not repo.has_published(revision.pk):
                    try:
                        with blobs.local_copy(revision) as zip_path:
                            repo.replace_folder(folder_for(revision), zip_path)
                    except blobs.BlobUnavailable as exc:  # ours: FAILED, retried by the sweep
                        raise PublishError(f"the upload store cannot give this upload back: {exc}") from exc
                    repo.commit_and_push(commit_message(revision))
        except PublishRefused as exc:  # its own files: the same every time, never retried
            log.warning("revision %s cannot be published, for good: %s", revision.pk, exc)
            revision.publish_state = Revision.PublishState.REFUSED
            revision.save(update_fields=["publish_state", "updated_at"])
            return revision.publish_state
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
