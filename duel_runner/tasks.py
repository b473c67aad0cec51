"""Celery tasks: ``duel_runner.smoke_test_revision``, ``duel_runner.run_duel``, ``duel_runner.reap``.

The lifecycle of each job (claim, heartbeat, fenced outcome, infrastructure failure with backoff, spool
across database outages) is the job runner's (``core.jobs.runner``); this module declares the work of
each kind and the action that stores its outcome. The rating is triggered by task name from
``record_duel_result``, so this package never imports ``tournament_manager``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import DatabaseError

from core.actions import (
    Claim,
    claim_duel,
    claim_smoke_test,
    fail_duel,
    fail_smoke_test,
    finish_smoke_test,
    rebuild_revision,
    record_duel_result,
    record_matches_so_far,
)
from core.jobs.runner import InfrastructureError, JobKind, run_job
from core.models import Duel, Revision, SmokeTest
from duel_runner.reaper import reap
from run_duel.outcomes import DuelResult, MatchResult

log = logging.getLogger(__name__)


def infrastructure_problem(duel_json: dict[str, Any]) -> str:
    """Why this duel JSON is our fault ("" if it is a fair result)."""
    if duel_json.get("result") == DuelResult.ERROR:
        return duel_json.get("error_msg") or "the duel could not run"
    bad = [m for m in duel_json.get("matches") or [] if m.get("result") == MatchResult.OTHER_ERROR]
    if bad:
        return f"{len(bad)} match(es) failed on our side: {bad[0].get('error_msg', '')}"
    return ""


def ensure_agent_images(revisions: list[Revision], sandbox: Any = None) -> None:
    """With the Docker sandbox, make sure each revision's image is on this host (pulled by digest when
    missing) before anything is played. An image the registry no longer has (or serves with the wrong
    digest) is the platform's to repair:
    the revision is rebuilt from its stored zip and the job waits without using an attempt; only if the
    rebuild cannot be queued does the failure count (and end FAILED with its reason after the attempts)."""
    if settings.SANDBOX != "docker":
        return
    from run_duel.images import ImageDigestMismatch, ImageMissing, ensure_images

    pool = getattr(sandbox, "pool", None)
    for revision in revisions:
        if pool is not None and pool.holds_image(revision.agent_ref):
            continue  # a warm container of this worker runs it: the engine has it (no engine call)
        try:
            ensure_images([revision.agent_ref])
        except (ImageMissing, ImageDigestMismatch) as exc:  # the registry lost or garbled it: rebuild
            rebuild = rebuild_revision(revision.pk, str(exc))
            if rebuild is None:
                raise InfrastructureError(
                    f"{exc}; revision {revision.pk} has no zip to rebuild from"
                ) from exc
            raise InfrastructureError(
                f"{exc}; revision {revision.pk} is being rebuilt from its zip (build {rebuild.pk}) "
                "and this job waits for it",
                counted=False,
            ) from exc


def _logs(duel_json: dict[str, Any]) -> str:
    parts = [duel_json.get("player_1_log") or "", duel_json.get("player_2_log") or ""]
    return "\n".join(p for p in parts if p)


def duel_sandbox() -> Any:
    """The sandbox of settings.SANDBOX; Docker's reuses warm containers as the DUEL_SANDBOX_REUSE* settings
    say (the containers live in this worker process between jobs)."""
    from run_duel.api import ReusePolicy, get_sandbox

    if settings.SANDBOX != "docker":
        return get_sandbox(settings.SANDBOX)
    reuse = ReusePolicy(
        enabled=settings.DUEL_SANDBOX_REUSE,
        max_duels=settings.DUEL_SANDBOX_REUSE_DUELS,
        max_age_s=float(settings.DUEL_SANDBOX_REUSE_SECONDS),
        max_idle=settings.DUEL_SANDBOX_REUSE_IDLE,
    )
    return get_sandbox("docker", reuse=reuse)


def _smoke_test(smoke: SmokeTest, claim: Claim) -> dict[str, Any]:
    """Self-play the revision; a player error is a verdict, ours raises :class:`InfrastructureError`."""
    from run_duel.api import LaunchSpec, smoke_test

    revision = smoke.revision
    spec = LaunchSpec(
        agent=revision.agent_ref,
        labels={"smoke_test": str(smoke.pk), "attempt": str(claim.generation), "revision": str(revision.pk)},
    )
    sandbox = duel_sandbox()
    try:
        ensure_agent_images([revision], sandbox)
        result = smoke_test(
            revision.competitor.environment.slug, sandbox, spec, pin_cpus=settings.DUEL_CPU_PINNING
        )
    finally:
        sandbox.close()
    problem = infrastructure_problem(result.duel)
    if problem:
        raise InfrastructureError(problem)
    return {"passed": result.ok, "reason": result.reason, "duel_json": result.duel, "log": _logs(result.duel)}


def _record_smoke_test(claim: Claim, outcome: dict[str, Any]) -> bool:
    return finish_smoke_test(claim, **outcome)


#: A running duel's matches are stored for its page at most this often (a short duel writes none).
LIVE_MATCHES_SECONDS = 1.0


class LiveMatches:
    """``on_match`` of a duel: stores the matches played so far, at most every ``LIVE_MATCHES_SECONDS``,
    fenced by the claim. Best effort: a database error only delays what the page shows."""

    def __init__(self, claim: Claim) -> None:
        self.claim = claim
        self.pending: list[dict[str, Any]] = []
        self.first_index = 0
        self.last_write = time.monotonic()

    def __call__(self, index: int, match: dict[str, Any]) -> None:
        if not self.pending:
            self.first_index = index
        self.pending.append(match)
        if time.monotonic() - self.last_write >= LIVE_MATCHES_SECONDS:
            try:
                record_matches_so_far(self.claim, self.first_index, self.pending)
            except DatabaseError as exc:
                log.warning("duel %s: could not store its matches so far: %s", self.claim.job_id, exc)
            self.pending = []
            self.last_write = time.monotonic()


def _duel(duel: Duel, claim: Claim) -> dict[str, Any]:
    """Play the duel. Matches lost to our side re-queue it while attempts remain; on the last attempt the
    fair matches are kept (the others count for nobody)."""
    from run_duel.api import LaunchSpec, play_duel, validate_duel_json

    labels = {"duel": str(duel.pk), "attempt": str(claim.generation)}
    specs = [
        LaunchSpec(agent=rev.agent_ref, labels={**labels, "seat": str(seat), "revision": str(rev.pk)})
        for seat, rev in ((1, duel.revision_1), (2, duel.revision_2))
    ]
    sandbox = duel_sandbox()
    try:
        ensure_agent_images([duel.revision_1, duel.revision_2], sandbox)
        result = play_duel(
            duel.environment.slug,
            sandbox,
            specs[0],
            specs[1],
            matches=duel.num_matches,
            pin_cpus=settings.DUEL_CPU_PINNING,
            on_match=LiveMatches(claim),
        )
    finally:
        sandbox.close()
    validate_duel_json(result)  # a bad duel JSON is our bug
    problem = infrastructure_problem(result)
    if problem and (result.get("result") == DuelResult.ERROR or claim.attempt < settings.MAX_ATTEMPTS):
        raise InfrastructureError(problem)
    return result


SMOKE_TEST = JobKind(
    name="smoke_test",
    model=SmokeTest,
    claim=claim_smoke_test,
    work=_smoke_test,
    record=_record_smoke_test,
    fail=fail_smoke_test,
)
DUEL = JobKind(
    name="duel", model=Duel, claim=claim_duel, work=_duel, record=record_duel_result, fail=fail_duel
)


@shared_task(name="duel_runner.smoke_test_revision", acks_late=True, ignore_result=True)
def smoke_test_revision(smoke_test_id: int) -> str:
    """Self-play a freshly built revision. Pass: ELIGIBLE. Player error: TEST_FAILED with the reason and
    the agent's log. Our error: re-queued with backoff."""
    return run_job(SMOKE_TEST, smoke_test_id)


@shared_task(name="duel_runner.run_duel", acks_late=True, ignore_result=True)
def run_duel(duel_id: int) -> str:
    """Play a queued duel and record its result (once). Infrastructure failures re-queue it."""
    return run_job(DUEL, duel_id)


@shared_task(name="duel_runner.reap", ignore_result=True)
def reap_task() -> dict[str, Any]:
    """Periodic: recover work whose worker died or whose hint was lost, re-send lost rating triggers,
    retry jobs that failed for infrastructure faults, remove orphan containers."""
    return reap()


# Live play (a person against an agent) lives in its own module; importing it registers its task.
from duel_runner import live_play  # noqa: E402, F401
