"""Uploading a revision, and re-running its pipeline.

Choice: an invalid zip creates NOTHING (no competitor, no revision, no version number used) and raises
``SubmissionError`` with the validator's message; the upload form shows it at once. ``REJECTED`` is kept
for revisions refused later (by an operator).

An upload is read once: its bytes are copied once (hashed on the way) and stored once; its archive is
validated once (``agent_uploads.upload.read_upload``, by the upload form or the API on the request's file,
else here on the copy), and that ``ValidatedZip`` answers every later question (the local sandbox's
refusal, the agent format).
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import uuid
from collections.abc import Iterable
from io import BufferedReader
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from agent_uploads.upload import read_upload
from agent_uploads.zip_validation import ValidatedZip, ValidationError, ZipLimits
from core import blobs, storage
from core.actions.agent_data import wipe_for_playing_revision
from core.actions.errors import ActionError, StorageFull, SubmissionError
from core.actions.seasons import frozen_season
from core.models import Build, Competitor, Environment, Revision, SmokeTest, User
from core.models.competitor import NAME_VALIDATOR
from core.queue import enqueue_on_commit

log = logging.getLogger(__name__)

ZipSource = BinaryIO | bytes | str | Path


def _spool(zip_file: ZipSource) -> tuple[Path, str, int]:
    """Copy the upload to DATA_DIR/tmp, enforcing the size cap; return (path, sha256, size)."""
    limit = settings.SUBMISSION_MAX_BYTES
    tmp = storage.tmp_dir() / f"upload-{uuid.uuid4().hex}.zip"
    digest = hashlib.sha256()
    size = 0
    chunks: Iterable[bytes]
    source: BufferedReader | None = None
    if isinstance(zip_file, bytes):
        chunks = [zip_file]
    elif isinstance(zip_file, str | Path):
        opened = source = open(zip_file, "rb")  # noqa: SIM115 - closed below
        chunks = iter(lambda: opened.read(1 << 20), b"")
    else:
        chunks = iter(lambda: zip_file.read(1 << 20), b"")
    try:
        with open(tmp, "wb") as out:
            for chunk in chunks:
                size += len(chunk)
                if size > limit:
                    raise SubmissionError(f"the zip is larger than the {limit // (1024 * 1024)} MiB limit")
                digest.update(chunk)
                out.write(chunk)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        if source is not None:
            source.close()
    if size == 0:
        tmp.unlink(missing_ok=True)
        raise SubmissionError("the upload is empty")
    return tmp, digest.hexdigest(), size


def upload_limits() -> ZipLimits:
    """The caps on an upload here (``SUBMISSION_MAX_BYTES``), for whoever reads it first."""
    return ZipLimits(max_zip_bytes=settings.SUBMISSION_MAX_BYTES)


def _validate_zip(path: Path) -> ValidatedZip:
    # The same validator the builder applies later (agent_uploads, a package below core).
    try:
        return read_upload(path, upload_limits())
    except ValidationError as exc:
        raise SubmissionError(str(exc)) from exc


def _refuse_what_this_sandbox_cannot_run(validated: ValidatedZip) -> None:
    """On a server whose agents run in the local sandbox (``SANDBOX=local``), refuse at upload what it
    cannot run as asked: C++ and JavaScript agents, packages other than numpy
    (``agent_uploads.local_support``), naming them. The Docker sandbox builds everything the validator let
    in."""
    if settings.SANDBOX != "local":
        return
    from agent_uploads.local_support import local_refusal  # packaging and PyYAML only when needed

    refusal, _notes = local_refusal(validated)
    if refusal:
        raise SubmissionError(refusal)


def _agent_format(choice: str, environment_slug: str, validated: ValidatedZip) -> tuple[str, bool]:
    """``(format, detected)`` of an upload (``run_duel.agent_formats``, a module without dependencies):
    ``choice`` is the owner's (``auto``: detect it from the files at the agent's root)."""
    from run_duel.api import agent_formats

    root_files = validated.root_files
    try:
        agent_format, detected = agent_formats.resolve(choice, environment_slug, root_files)
    except ValueError as exc:
        raise SubmissionError(str(exc)) from None
    why = agent_formats.files_problem(agent_format, root_files)
    if why:
        raise SubmissionError(why)
    return agent_format, detected


def submit_revision(
    user: User,
    environment_slug: str,
    competitor_name: str,
    zip_file: ZipSource,
    is_public: bool = False,
    *,
    wipe_data: bool = False,
    agent_format: str = "auto",
    validated: ValidatedZip | None = None,
) -> Revision:
    """Store a new revision of ``user``'s competitor ``competitor_name`` (created on first upload) and
    queue its build. Versions are 1, 2, ... per competitor, without gaps or races: the competitor row is
    locked while ``next_version`` is read and bumped. ``wipe_data``: the competitor's data folder is
    emptied when this revision starts playing. ``validated``: the caller already read ``zip_file`` with
    ``agent_uploads.upload.read_upload`` and ``upload_limits()`` (the upload form, the API), so it is not
    read again. Raises ``SubmissionError`` and stores nothing for a bad name, an unknown environment or an
    invalid zip."""
    try:
        NAME_VALIDATOR(competitor_name)
    except DjangoValidationError as exc:
        raise SubmissionError(f"bad competitor name {competitor_name!r}: {' '.join(exc.messages)}") from None
    environment = Environment.objects.filter(slug=environment_slug, is_active=True).first()
    if environment is None:
        raise SubmissionError(f"unknown environment {environment_slug!r}")
    frozen = frozen_season(environment.pk)
    if frozen is not None:
        raise SubmissionError(
            f"submissions to {environment.name} are frozen: season {frozen.name} has ended and its finals "
            "are being played"
        )

    try:
        return _store_revision(
            user, environment, competitor_name, zip_file, is_public, wipe_data, agent_format, validated
        )
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            log.error("upload of %s by user %s not stored: %s", competitor_name, user.pk, exc)
            raise StorageFull(
                "the arena has no disk space left for your upload right now: nothing was stored; "
                "please try again later (its operators are told)"
            ) from exc
        raise


def _store_revision(
    user: User,
    environment: Environment,
    competitor_name: str,
    zip_file: ZipSource,
    is_public: bool,
    wipe_data: bool,
    agent_format: str,
    validated: ValidatedZip | None,
) -> Revision:
    """``submit_revision``'s storing half, once the name, game and season were checked."""
    environment_slug = environment.slug
    tmp, sha256, size = _spool(zip_file)
    dest: Path | None = None
    try:
        if validated is None:
            validated = _validate_zip(tmp)
        _refuse_what_this_sandbox_cannot_run(validated)
        agent_format, detected = _agent_format(agent_format, environment_slug, validated)
        with transaction.atomic():
            competitor, _ = Competitor.objects.get_or_create(
                owner=user, environment=environment, name=competitor_name, defaults={"is_public": is_public}
            )
            competitor = Competitor.objects.select_for_update().get(pk=competitor.pk)
            version = competitor.next_version
            Competitor.objects.filter(pk=competitor.pk).update(
                next_version=F("next_version") + 1, is_public=is_public
            )
            dest = storage.submissions_dir() / str(competitor.pk) / f"{version}-{sha256[:16]}.zip"
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, dest)
            # Every worker builds from the store (no machine reads another's DATA_DIR); the zip above is
            # this host's cache of it.
            blobs.put_file(dest, sha256)
            revision = Revision.objects.create(
                competitor=competitor,
                version=version,
                zip_path=storage.relative(dest),
                zip_size=size,
                content_hash=sha256,
                is_public=is_public,
                wipe_data=wipe_data,
                agent_format=agent_format,
                agent_format_detected=detected,
                publish_state=Revision.PublishState.PRIVATE,
            )
            build = Build.objects.create(revision=revision, enqueued_at=timezone.now())
            enqueue_on_commit(Build.task_name, build.pk)
    except BaseException:
        if dest is not None:
            dest.unlink(missing_ok=True)
        raise
    finally:
        tmp.unlink(missing_ok=True)
    return revision


def requeue_build(revision_id: int) -> Build:
    """Build revision ``revision_id`` again from its upload (operator action); its pipeline restarts."""
    with transaction.atomic():
        revision = Revision.objects.select_for_update().get(pk=revision_id)
        if revision.builds.filter(state__in=[Build.State.QUEUED, Build.State.RUNNING]).exists():
            raise ActionError(f"revision {revision_id} already has a build queued or running")
        revision.state = Revision.State.UPLOADED
        revision.error_message = ""
        revision.save(update_fields=["state", "error_message", "updated_at"])
        build = Build.objects.create(revision=revision, enqueued_at=timezone.now())
        enqueue_on_commit(Build.task_name, build.pk)
    return build


def requeue_smoke_test(revision_id: int) -> SmokeTest:
    """Smoke-test a built revision again (operator action)."""
    with transaction.atomic():
        revision = Revision.objects.select_for_update().get(pk=revision_id)
        if not revision.agent_ref:
            raise ActionError(f"revision {revision_id} has not been built")
        if revision.smoke_tests.filter(state__in=[SmokeTest.State.QUEUED, SmokeTest.State.RUNNING]).exists():
            raise ActionError(f"revision {revision_id} already has a smoke test queued or running")
        revision.state = Revision.State.BUILT
        revision.error_message = ""
        revision.save(update_fields=["state", "error_message", "updated_at"])
        smoke = SmokeTest.objects.create(revision=revision, enqueued_at=timezone.now())
        enqueue_on_commit(SmokeTest.task_name, smoke.pk)
    return smoke


def reject_revision(revision_id: int, reason: str) -> Revision:
    """Refuse a revision (operator action): it stops playing; its competitor falls back to its newest other
    ELIGIBLE revision, if any (whose data folder is emptied then if it has ``wipe_data``: the folder may
    hold what the refused revision wrote)."""
    with transaction.atomic():
        revision = Revision.objects.select_for_update().get(pk=revision_id)
        revision.state = Revision.State.REJECTED
        revision.error_message = reason
        revision.save(update_fields=["state", "error_message", "updated_at"])
        competitor = Competitor.objects.select_for_update().get(pk=revision.competitor_id)
        if competitor.current_revision_id == revision.pk:
            competitor.current_revision = (
                Revision.objects.filter(competitor=competitor, state=Revision.State.ELIGIBLE)
                .order_by("-version")
                .first()
            )
            competitor.save(update_fields=["current_revision"])
            if competitor.current_revision is not None:
                wipe_for_playing_revision(competitor, competitor.current_revision)
    return revision
