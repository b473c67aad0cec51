"""Celery tasks: ``duel_runner.smoke_test_revision``, ``duel_runner.run_duel``, ``duel_runner.reap``.

The lifecycle of each job (claim, heartbeat, fenced outcome, infrastructure failure with backoff, spool
across database outages) is the job runner's (``core.jobs.runner``); this module declares the work of
each kind and the action that stores its outcome. The rating is triggered by task name from
``record_duel_result``, so this package never imports ``tournament_manager``.

**Data folders** (``AGENT_DATA_MB``; ``core.actions.agent_data``): a duel gives each agent its
competitor's persistent folder and the referee reads back, at the end, the folder of every agent still
running. The folders are saved in the *record* step, in the same transaction as the result
(``record_duel_with_data``): fenced by the claim like the result, and never for a duel whose work raised
(an infrastructure error re-queues the duel and its folders are dropped; the next attempt starts from
the stored content). ``_duel`` returns them with the duel JSON under :data:`AGENT_DATA_KEY` (base64, so
the outcome stays JSON): a result spooled during a database outage keeps them and saves them when it is
recorded, under the same claim and compare-and-set (a reset or another duel's save meanwhile wins).
"""

from __future__ import annotations

import base64
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from celery import shared_task
from django.conf import settings
from django.db import DatabaseError

from core.actions import (
    Claim,
    DataSave,
    claim_duel,
    claim_smoke_test,
    fail_duel,
    fail_smoke_test,
    finish_smoke_test,
    load_playable_data,
    rebuild_revision,
    record_duel_result,
    record_duel_with_data,
    record_matches_so_far,
)
from core.jobs.runner import InfrastructureError, JobKind, run_job
from core.models import Duel, Revision, SmokeTest
from duel_runner.reaper import reap
from run_duel.api import DuelResult, MatchResult

if TYPE_CHECKING:
    from run_duel.api import AgentData, Limits

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
    from run_duel.api import ImageDigestMismatch, ImageMissing, ensure_images

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


def data_limits() -> Limits:
    """The base limits of every agent the platform launches: ``data_mb`` is ``AGENT_DATA_MB`` (a game's
    ``info.yml`` may override it in ``run_duel.referee.limits_for``; 0: no data folder)."""
    from run_duel.api import Limits

    return Limits(data_mb=settings.AGENT_DATA_MB)


def _smoke_test(smoke: SmokeTest, claim: Claim) -> dict[str, Any]:
    """Self-play the revision; a player error is a verdict, ours raises :class:`InfrastructureError`.
    The agent gets an empty scratch data folder (never saved), so an agent that uses it is tested too."""
    from run_duel.api import AgentData, LaunchSpec, smoke_test

    revision = smoke.revision
    spec = LaunchSpec(
        agent=revision.agent_ref,
        agent_format=revision.agent_format,
        labels={"smoke_test": str(smoke.pk), "attempt": str(claim.generation), "revision": str(revision.pk)},
        limits=data_limits(),
        data=AgentData(save=False) if settings.AGENT_DATA_MB > 0 else None,
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


#: The key of a duel's outcome holding the data folders to save (never part of the stored duel JSON).
AGENT_DATA_KEY = "agent_data"
#: The duels whose agents' data folders are saved: those the platform schedules. A challenge (a person
#: picks its opponent) gives both agents a copy that is thrown away, as smoke tests and live games do, so a
#: stranger's challenges never write another competitor's folder (docs/PROTOCOL.md, "The data folder").
DATA_SAVING_KINDS = frozenset({Duel.Kind.LADDER, Duel.Kind.TOURNAMENT, Duel.Kind.FINALS})


@dataclass
class SeatData:
    """One seat's data folder in a duel: its competitor, the generation read before play, and the
    ``run_duel`` folder the referee fills (``None``: data folders are off)."""

    competitor_id: int
    generation: int
    data: AgentData | None


def load_seat_data(duel: Duel) -> list[SeatData]:
    """Each seat's folder, loaded before play. In self-play (both revisions of one competitor) both
    seats start from the same content and only seat 1's folder is saved; a duel whose kind is not in
    :data:`DATA_SAVING_KINDS` (a challenge) saves neither."""
    from run_duel.api import AgentData

    seats: list[SeatData] = []
    loaded: dict[int, tuple[bytes, int]] = {}
    for revision in (duel.revision_1, duel.revision_2):
        competitor_id = revision.competitor_id
        if settings.AGENT_DATA_MB <= 0:
            seats.append(SeatData(competitor_id, 0, None))
            continue
        first = competitor_id not in loaded
        save = first and duel.kind in DATA_SAVING_KINDS
        if first:
            loaded[competitor_id] = load_playable_data(competitor_id, duel.environment.slug)
        archive, generation = loaded[competitor_id]
        seats.append(SeatData(competitor_id, generation, AgentData(archive=archive, save=save)))
    return seats


def folders_left(seats: list[SeatData]) -> list[dict[str, Any]]:
    """What each saving seat's folder became (``saved`` or ``problem``, set by the referee), as JSON."""
    folders = []
    for seat in seats:
        if seat.data is None or not seat.data.save:
            continue
        saved = seat.data.saved
        folders.append(
            {
                "competitor_id": seat.competitor_id,
                "generation": seat.generation,
                "archive": base64.b64encode(saved).decode("ascii") if saved is not None else None,
                "problem": seat.data.problem,
            }
        )
    return folders


#: The duels that stop once decided (``run_duel.stopping``: a sequential test ends the duel after a whole
#: pair of matches once one player is clearly stronger): ladder duels only. Tournament editions, finals
#: and challenges play every match they were promised; smoke tests are self-play.
STOPPING_KINDS = frozenset({Duel.Kind.LADDER})


#: The rule they stop by, as a duel spec carries it (``run_duel.stopping.StopRule``'s defaults).
LADDER_STOP_RULE: dict[str, Any] = {"rule": "sequential-pairs"}


def stop_rule_of(duel: Duel) -> dict[str, Any] | None:
    """The stop rule of ``duel``'s spec (``None``: every match is played; setting ``TM_DUEL_STOP_EARLY``
    off: no duel stops early)."""
    stops = duel.kind in STOPPING_KINDS and getattr(settings, "TM_DUEL_STOP_EARLY", True)
    return dict(LADDER_STOP_RULE) if stops else None


def _duel(duel: Duel, claim: Claim) -> dict[str, Any]:
    """Play the duel. Matches lost to our side re-queue it while attempts remain; on the last attempt the
    fair matches are kept (the others count for nobody). The data folders the agents left ride along
    under :data:`AGENT_DATA_KEY` and are saved with the result (:func:`record_duel`)."""
    from run_duel.api import LaunchSpec, play_duel, validate_duel_json

    labels = {"duel": str(duel.pk), "attempt": str(claim.generation)}
    seats = load_seat_data(duel)
    specs = [
        LaunchSpec(
            agent=rev.agent_ref,
            agent_format=rev.agent_format,
            labels={**labels, "seat": str(seat), "revision": str(rev.pk)},
            limits=data_limits(),
            data=seats[seat - 1].data,
        )
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
            stop_rule=stop_rule_of(duel),
        )
    finally:
        sandbox.close()
    validate_duel_json(result)  # a bad duel JSON is our bug
    problem = infrastructure_problem(result)
    if problem and (result.get("result") == DuelResult.ERROR or claim.attempt < settings.MAX_ATTEMPTS):
        raise InfrastructureError(problem)
    folders = folders_left(seats)
    return {**result, AGENT_DATA_KEY: folders} if folders else result


def record_duel(claim: Claim, outcome: dict[str, Any]) -> bool:
    """Store a duel's outcome: the result and, in the same transaction, the data folders riding along
    (``core.actions.agent_data.record_duel_with_data``). Also records spooled outcomes, with or without
    folders. Never changes ``outcome`` (a database blip calls it again with the same one)."""
    folders = outcome.get(AGENT_DATA_KEY)
    if not folders:
        return record_duel_result(claim, outcome)
    duel_json = {key: value for key, value in outcome.items() if key != AGENT_DATA_KEY}
    saves = [
        DataSave(
            competitor_id=int(f["competitor_id"]),
            generation=int(f["generation"]),
            archive=base64.b64decode(f["archive"]) if f.get("archive") is not None else None,
            problem=str(f.get("problem") or ""),
        )
        for f in folders
    ]
    return record_duel_with_data(claim, duel_json, saves)


SMOKE_TEST = JobKind(
    name="smoke_test",
    model=SmokeTest,
    claim=claim_smoke_test,
    work=_smoke_test,
    record=_record_smoke_test,
    fail=fail_smoke_test,
)
DUEL = JobKind(name="duel", model=Duel, claim=claim_duel, work=_duel, record=record_duel, fail=fail_duel)


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


# Live play (a person against an agent) lives in its own module; importing it registers its task. The
# host's agent containers over the worker's life (orphans, warm containers at a stop): their signals.
from duel_runner import containers, live_play  # noqa: E402, F401
