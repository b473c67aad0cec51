"""Celery task ``builder.build_revision``: build an uploaded revision, then queue its smoke test."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from core import storage
from core.actions import claim_build, fail_build, finish_build
from core.db import retry_on_db_error
from core.models import Build, Revision

log = logging.getLogger(__name__)


@shared_task(name="builder.build_revision", acks_late=True, ignore_result=True)
def build_revision(build_id: int) -> str:
    """Claim build ``build_id``, build the revision's zip with the backend matching ``SANDBOX`` and store
    the outcome (``finish_build`` queues the smoke test on success). Our failures re-queue the build."""
    from builder import build_submission
    from duel_runner.heartbeat import Heartbeat

    build = claim_build(build_id)
    if build is None:
        return "not claimed"
    revision = Revision.objects.select_related("competitor").get(pk=build.revision_id)
    backend = "docker" if settings.SANDBOX == "docker" else "local"
    with Heartbeat(Build, build.pk, build.worker, build.attempts):
        try:
            result = build_submission(
                storage.absolute(revision.zip_path),
                # No human tag: the builder then returns its content-addressed image name, which can never
                # be re-pointed by another deployment or test database sharing this Docker engine.
                tag=None,
                backend=backend,
                work_dir=storage.builds_dir(),
            )
        except Exception as exc:  # a bug or an unavailable engine: ours, not the submission's
            log.exception("build %s could not run", build.pk)
            reason = f"{type(exc).__name__}: {exc}"
            retry_on_db_error(lambda: fail_build(build.pk, reason, retry=True))
            return "infrastructure error"
        if not result.ok and result.error_kind == "INFRA":
            retry_on_db_error(
                lambda: fail_build(build.pk, result.error or "build infrastructure error", retry=True)
            )
            return "infrastructure error"
        retry_on_db_error(
            lambda: finish_build(
                build.pk,
                ok=result.ok,
                agent_ref=result.agent_ref,
                log=result.log,
                error=result.error,
                duration_s=result.duration_s,
            )
        )
    return "built" if result.ok else "failed"
