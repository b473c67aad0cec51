"""Celery task ``builder.build_revision``: build an uploaded revision, then queue its smoke test.

The lifecycle (claim, heartbeat, outcome, infrastructure failure, backoff, spool) is the job runner's
(``core.jobs.runner``); this module declares only the work and which actions store its outcome.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from celery import shared_task
from django.conf import settings

from core import blobs, storage
from core.actions import Claim, claim_build, fail_build, finish_build
from core.jobs.runner import InfrastructureError, JobKind, run_job
from core.models import Build


def _build(build: Build, claim: Claim) -> dict[str, Any]:
    """Build the revision's upload with the backend matching ``SANDBOX``; the submission's faults are an
    outcome, ours raise :class:`InfrastructureError`. The upload comes from the store (``core.blobs``),
    verified by its sha256: a store that cannot give it back is ours, never the uploader's."""
    from builder import build_submission

    try:
        with blobs.local_copy(build.revision) as zip_path:
            result = build_submission(
                zip_path,
                # No human tag: the builder then returns its content-addressed image name, which can never
                # be re-pointed by another deployment or test database sharing this Docker engine.
                tag=None,
                backend="docker" if settings.SANDBOX == "docker" else "local",
                work_dir=storage.builds_dir(),
            )
    except blobs.BlobUnavailable as exc:
        raise InfrastructureError(f"the upload store cannot give this upload back: {exc}") from exc
    if not result.ok and result.error_kind == "INFRA":
        raise InfrastructureError(result.error or "build infrastructure error")
    outcome = asdict(result)
    stored = {k: outcome[k] for k in ("ok", "agent_ref", "log", "error", "duration_s", "language")}
    stored["packages"] = [list(p) for p in result.packages]  # JSON-able: the job runner may spool it
    stored["image_bytes"] = result.image_size_bytes or None  # shown to the owner (Revision.image_bytes)
    stored["package_notes"] = list(result.package_notes)
    stored["stack"] = result.stack
    stored["added_bytes"] = result.added_bytes if result.image_size_bytes else None
    return stored


def _record(claim: Claim, outcome: dict[str, Any]) -> bool:
    return finish_build(claim, **outcome)


BUILD = JobKind(name="build", model=Build, claim=claim_build, work=_build, record=_record, fail=fail_build)


@shared_task(name="builder.build_revision", acks_late=True, ignore_result=True)
def build_revision(build_id: int) -> str:
    """Claim build ``build_id``, build it and store the outcome (``finish_build`` queues the smoke test on
    success). Our failures re-queue the build with backoff."""
    return run_job(BUILD, build_id)
