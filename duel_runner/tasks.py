"""Celery tasks: ``duel_runner.smoke_test_revision``, ``duel_runner.run_duel``, ``duel_runner.reap``.

Each task takes an id, claims its row atomically (a second delivery finds nothing to claim and returns),
keeps its lease alive while it works, and stores the outcome through one ``core.actions`` function,
retrying that save across database blips. Infrastructure failures re-queue the job (never charged to a
player); the rating is triggered by task name from ``record_duel_result``, so this package never
imports ``tournament_manager``.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.conf import settings

from core.actions import (
    claim_duel,
    claim_smoke_test,
    fail_duel,
    fail_smoke_test,
    finish_smoke_test,
    record_duel_result,
)
from core.db import retry_on_db_error
from core.models import Duel, Revision, SmokeTest
from duel_runner.heartbeat import Heartbeat
from duel_runner.reaper import reap

log = logging.getLogger(__name__)
OTHER_ERROR = "OTHER_ERROR"


def _infra_problem(duel_json: dict[str, Any]) -> str:
    """Why this duel JSON is our fault ("" if it is a fair result)."""
    if duel_json.get("result") == "ERROR":
        return duel_json.get("error_msg") or "the duel could not run"
    bad = [m for m in duel_json.get("matches") or [] if m.get("result") == OTHER_ERROR]
    if bad:
        return f"{len(bad)} match(es) failed on our side: {bad[0].get('error_msg', '')}"
    return ""


def _logs(duel_json: dict[str, Any]) -> str:
    parts = [duel_json.get("player_1_log") or "", duel_json.get("player_2_log") or ""]
    return "\n".join(p for p in parts if p)


@shared_task(name="duel_runner.smoke_test_revision", acks_late=True, ignore_result=True)
def smoke_test_revision(smoke_test_id: int) -> str:
    """Self-play a freshly built revision. Pass: ELIGIBLE. Player error: TEST_FAILED with the reason and
    the agent's log. Our error: re-queued."""
    from run_duel.api import LaunchSpec, get_sandbox, smoke_test

    smoke = claim_smoke_test(smoke_test_id)
    if smoke is None:
        return "not claimed"
    revision = Revision.objects.select_related("competitor__environment").get(pk=smoke.revision_id)
    slug = revision.competitor.environment.slug
    spec = LaunchSpec(
        agent=revision.agent_ref, labels={"smoke_test": str(smoke.pk), "attempt": str(smoke.attempts)}
    )
    with Heartbeat(SmokeTest, smoke.pk, smoke.worker, smoke.attempts):
        try:
            sandbox = get_sandbox(settings.SANDBOX)
            try:
                result = smoke_test(slug, sandbox, spec, pin_cpus=settings.DUEL_CPU_PINNING)
            finally:
                sandbox.close()
        except Exception as exc:  # our side: sandbox unavailable, bug in the referee...
            log.exception("smoke test %s could not run", smoke.pk)
            reason = f"{type(exc).__name__}: {exc}"
            retry_on_db_error(lambda: fail_smoke_test(smoke.pk, reason, retry=True))
            return "infrastructure error"
        problem = _infra_problem(result.duel)
        if problem:
            retry_on_db_error(lambda: fail_smoke_test(smoke.pk, problem, retry=True))
            return "infrastructure error"
        retry_on_db_error(
            lambda: finish_smoke_test(
                smoke.pk,
                passed=result.ok,
                reason=result.reason,
                duel_json=result.duel,
                log=_logs(result.duel),
            )
        )
    return "passed" if result.ok else "failed"


@shared_task(name="duel_runner.run_duel", acks_late=True, ignore_result=True)
def run_duel(duel_id: int) -> str:
    """Play a queued duel and record its result (once). Infrastructure failures re-queue it."""
    from run_duel.api import LaunchSpec, get_sandbox, play_duel, validate_duel_json

    duel = claim_duel(duel_id)
    if duel is None:
        return "not claimed"
    duel = Duel.objects.select_related("environment", "revision_1", "revision_2").get(pk=duel.pk)
    labels = {"duel": str(duel.pk), "attempt": str(duel.attempts)}
    specs = [
        LaunchSpec(agent=rev.agent_ref, labels={**labels, "seat": str(seat)})
        for seat, rev in ((1, duel.revision_1), (2, duel.revision_2))
    ]
    with Heartbeat(Duel, duel.pk, duel.worker, duel.attempts):
        try:
            sandbox = get_sandbox(settings.SANDBOX)
            try:
                result = play_duel(
                    duel.environment.slug,
                    sandbox,
                    specs[0],
                    specs[1],
                    matches=duel.num_matches,
                    pin_cpus=settings.DUEL_CPU_PINNING,
                )
            finally:
                sandbox.close()
            validate_duel_json(result)
        except Exception as exc:  # incl. DuelResultError: a bad duel JSON is our bug
            log.exception("duel %s could not run", duel.pk)
            reason = f"{type(exc).__name__}: {exc}"
            retry_on_db_error(lambda: fail_duel(duel.pk, reason, retry=True))
            return "infrastructure error"
        problem = _infra_problem(result)
        if problem and (result.get("result") == "ERROR" or duel.attempts < settings.MAX_ATTEMPTS):
            retry_on_db_error(lambda: fail_duel(duel.pk, problem, retry=True))
            return "infrastructure error"
        recorded = retry_on_db_error(lambda: record_duel_result(duel.pk, result))
    return "recorded" if recorded else "duplicate ignored"


@shared_task(name="duel_runner.reap", ignore_result=True)
def reap_task() -> dict[str, Any]:
    """Periodic: recover work whose lease expired or whose hint was lost; remove orphan containers."""
    return reap()


# Live play (a person against an agent) lives in its own module; importing it registers its task.
from duel_runner import live_play  # noqa: E402, F401
