"""Celery task ``duel_runner.play_session``: runs the agent of a live game against a person.

The web stores the person's moves in the database (``core.actions.human_move``); this task launches the
agent in the duel sandbox (``settings.SANDBOX``, the game's limits), polls the session row every
``PLAY_POLL_SECONDS`` and, on the agent's turn, asks the agent with the game's per-move deadline and stores
its move (``core.actions.agent_move``). It ends when the game is decided, when the agent breaks a rule
(``AGENT_ERROR``: the person wins, the reason is shown), or when the person has not moved for
``PLAY_INACTIVITY_SECONDS`` (``ABANDONED``); the agent's process or container is always removed.
"""

from __future__ import annotations

import logging
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from core.actions import Claim, load_playable_data
from core.actions.play import (
    agent_move,
    claim_play_session,
    end_play_session,
    inactivity_timeout,
    play_setting,
    requeue_play_session,
    save_agent_log,
)
from core.db import retry_on_db_error
from core.jobs.runner import JobKind, run_job
from core.models import PlaySession
from run_duel.api import PlayerFault, Seat

if TYPE_CHECKING:
    from run_duel.api import AgentData, Limits

log = logging.getLogger(__name__)

AGENT_ERROR = PlaySession.Result.AGENT_ERROR
ABANDONED = PlaySession.Result.ABANDONED
FAILED = PlaySession.Result.FAILED
#: How long the agent may take to close its channel after ``close`` before it is killed.
CLOSE_GRACE_S = 0.2


def _limits(slug: str) -> Limits:
    """The game's ``info.yml`` limits on top of the platform's data folder size, exactly as duels get
    them (``run_duel.referee.limits_for``)."""
    from environments import get_info
    from run_duel.api import Limits, limits_for

    return limits_for(get_info(slug), Limits(data_mb=settings.AGENT_DATA_MB))


def _data(competitor_id: int, slug: str, limits: Limits) -> AgentData | None:
    """A copy of the competitor's current data folder, never saved: a game against a person changes
    nothing the agent keeps (``None`` when data folders are off)."""
    from run_duel.api import AgentData

    if limits.data_mb <= 0:
        return None
    archive, _generation = load_playable_data(competitor_id, slug)
    return AgentData(archive=archive, save=False)


def drive(session: PlaySession, claim: Claim) -> dict[str, Any]:
    """Run the agent's side of a claimed session until it ends. Our failures (sandbox unavailable, a
    bug) raise, and the job runner ends or re-queues the game; the agent is always removed."""
    from environments import get_game
    from run_duel.api import LaunchSpec, get_sandbox

    session = PlaySession.objects.select_related("environment", "revision").get(pk=session.pk)
    slug = session.environment.slug
    game = get_game(slug)
    limits = _limits(slug)
    spec = LaunchSpec(
        agent=session.revision.agent_ref,
        agent_format=session.revision.agent_format,
        game=slug,
        limits=limits,
        labels={"play_session": str(session.pk)},
        data=_data(session.revision.competitor_id, slug, limits),
    )
    poll_s = play_setting("PLAY_POLL_SECONDS", 0.1)
    idle_s = inactivity_timeout()
    sandbox = get_sandbox(settings.SANDBOX)
    seat = Seat(session.agent_seat, sandbox, spec, name="the agent")
    try:
        try:
            seat.spawn()
            seat.await_ready()
            if seat.fatal is not None:
                raise seat.fatal
            outcome = _loop(claim, game, seat, poll_s, idle_s)
        except PlayerFault as fault:
            retry_on_db_error(
                partial(
                    end_play_session,
                    session.pk,
                    AGENT_ERROR,
                    claim=claim,
                    kind=fault.kind,
                    message=fault.message,
                    log=seat.stderr_tail(),
                )
            )
            return {"outcome": "agent error"}
        final = PlaySession.objects.get(pk=session.pk)
        if game.is_over(final.state):
            rewards = game.rewards(final.state)
            end_fault = seat.end(game.observation(final.state, seat.index).tolist(), rewards[seat.index])
            if end_fault is not None:
                log.info("agent failed at end: %s", end_fault.message)
        save_agent_log(claim, seat.stderr_tail())
        return {"outcome": outcome}
    finally:
        _close(seat)
        sandbox.close()


def _close(seat: Seat) -> None:
    """Say ``close``, give the agent a moment to close its channel, then kill whatever is left."""
    if seat.proc is not None:
        seat.say_close()
        seat.proc.channel.wait_closed(CLOSE_GRACE_S)
    seat.discard()


def _loop(claim: Claim, game: Any, seat: Seat, poll_s: float, idle_s: float) -> str:
    """Poll the session; move on the agent's turn; stop when it is over, the person walked away, or
    another worker holds the session now."""
    session_id = claim.job_id
    while True:
        session = PlaySession.objects.only(
            "status", "state", "moves", "human_seat", "last_activity_at", "generation"
        ).get(pk=session_id)
        if session.status != PlaySession.Status.PLAYING or session.generation != claim.generation:
            return "finished"
        state = session.state
        if game.to_move(state) == seat.index:
            obs = game.observation(state, seat.index).tolist()
            action, elapsed = seat.move(obs, game.legal_actions(state), session.moves)
            retry_on_db_error(partial(agent_move, claim, action, elapsed))
            continue
        idle = (timezone.now() - session.last_activity_at).total_seconds()
        if idle > idle_s:
            reason = f"No move for {idle_s:g} s: the game was closed and the agent stopped."
            ended = retry_on_db_error(
                partial(end_play_session, session_id, ABANDONED, claim=claim, message=reason)
            )
            if ended:
                return "abandoned"
            continue
        time.sleep(poll_s)


def fail_live_game(
    session_id: int, reason: str, *, claim: Claim, counted: bool = True, delay_s: float | None = None
) -> bool:
    """Our side failed during a live game: a worker that is itself unhealthy hands the game back to the
    queue (a healthy worker resumes it from its stored state); otherwise the game ends FAILED, never
    charged to the agent."""
    if not counted:
        return requeue_play_session(claim)
    return end_play_session(session_id, FAILED, claim=claim, message=reason)


LIVE_GAME = JobKind(
    name="live_game",
    model=PlaySession,
    claim=claim_play_session,
    work=drive,
    record=None,  # moves are stored as they are played
    fail=fail_live_game,
)


@shared_task(name="duel_runner.play_session", acks_late=True, ignore_result=True)
def play_session(session_id: int) -> str:
    """Run the agent of live game ``session_id`` (a duplicate delivery finds nothing to claim)."""
    return run_job(LIVE_GAME, session_id)
