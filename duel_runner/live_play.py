"""Celery task ``duel_runner.play_session``: runs the agent of a live game against a person.

The web stores the person's moves in the database (``core.actions.human_move``); this task launches the
agent in the duel sandbox (``settings.SANDBOX``, the game's limits), polls the session row every
``PLAY_POLL_SECONDS`` and, on the agent's turn, asks the agent with the game's per-move deadline and stores
its move (``core.actions.agent_move``). It ends when the game is decided, when the agent breaks a rule
(``AGENT_ERROR``: the person wins, the reason is shown), or when the person has not moved for
``PLAY_INACTIVITY_SECONDS`` (``ABANDONED``); the agent's process or container is always removed.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from functools import partial
from typing import Any

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from core.actions import Claim
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
from run_duel.outcomes import ErrorKind

log = logging.getLogger(__name__)

AGENT_ERROR = PlaySession.Result.AGENT_ERROR
ABANDONED = PlaySession.Result.ABANDONED
FAILED = PlaySession.Result.FAILED
#: Characters of the agent's stderr quoted in an error message shown to the person.
ERROR_LOG_CHARS = 1500


class AgentFault(Exception):
    """The agent broke a rule; ``kind`` is the referee's error kind (TIMEOUT, CRASH, ...)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class LiveAgent:
    """One agent process speaking the harness protocol (``run_duel/README.md``) for a single match."""

    def __init__(self, proc: Any, limits: Any, seat: int) -> None:
        self.proc = proc
        self.limits = limits
        self.seat = seat
        self.started = False

    def _ask(self, message: dict[str, Any], timeout: float, where: str) -> dict[str, Any]:
        from run_duel.channel import ChannelError

        try:
            self.proc.channel.send(message, timeout)
            return self.proc.channel.recv(timeout, self.limits.max_message_bytes)
        except ChannelError as exc:
            raise AgentFault(
                ErrorKind.BAD_OUTPUT if exc.kind == "PROTOCOL" else exc.kind, f"{where}: {exc}"
            ) from exc

    def await_ready(self) -> None:
        """Wait for ``ready`` (``init_timeout``); an import error or a slow start is the agent's fault."""
        from run_duel.channel import ChannelError

        try:
            reply = self.proc.channel.recv(self.limits.init_timeout, self.limits.max_message_bytes)
        except ChannelError as exc:
            kind = ErrorKind.BAD_OUTPUT if exc.kind == "PROTOCOL" else exc.kind
            raise AgentFault(kind, f"the agent did not start: {exc}") from exc
        if reply.get("type") == "error":
            raise AgentFault(
                ErrorKind.CRASH,
                f"player.py raised {reply.get('exception')} while starting:\n{reply.get('message', '')}",
            )
        if reply.get("type") != "ready":
            raise AgentFault(ErrorKind.BAD_OUTPUT, f"the agent sent {str(reply)[:200]} instead of ready")

    def choose(self, observation: list[Any], legal: list[int], move: int) -> tuple[int, float]:
        """The agent's action for the current state and how long it took (the game's move deadline)."""
        if self.started:
            msg = {"type": "step", "state": observation, "valid_actions": legal, "reward": 0.0}
        else:
            msg = {"type": "start", "state": observation, "valid_actions": legal}
            self.started = True
        t0 = time.perf_counter()
        reply = self._ask(msg, self.limits.move_timeout, f"at move {move + 1}")
        elapsed = time.perf_counter() - t0
        if reply.get("type") == "error":
            raise AgentFault(
                ErrorKind.CRASH,
                f"the agent raised {reply.get('exception')} at move {move + 1}:\n{reply.get('message', '')}",
            )
        action = reply.get("action") if reply.get("type") == "action" else None
        if type(action) is not int or action not in legal:
            shown = str(reply.get("action", reply))[:80]
            raise AgentFault(
                ErrorKind.INVALID_ACTION, f"the agent played {shown} at move {move + 1}, not a legal move"
            )
        return action, elapsed

    def end(self, observation: list[Any], reward: float) -> None:
        """Tell the agent the match is over (if it played); a failure here changes nothing."""
        if not self.started:
            return
        self.started = False
        try:
            self._ask(
                {"type": "end", "state": observation, "reward": reward}, self.limits.move_timeout, "end"
            )
        except AgentFault as fault:
            log.info("agent failed at end: %s", fault.message)

    def close(self) -> None:
        """Say ``close``, give it a moment, then kill whatever is left (idempotent)."""
        from run_duel.channel import ChannelError

        try:
            self.proc.channel.send({"type": "close"}, 0.1)
            self.proc.wait_exit(0.2)
        except ChannelError:
            pass
        finally:
            self.proc.kill()


def _limits(slug: str) -> Any:
    """The game's ``info.yml`` limits, exactly as duels get them."""
    from environments import get_info
    from run_duel.api import Limits

    info = get_info(slug)
    return dataclasses.replace(
        Limits(),
        memory_mb=info.memory_limit_mb,
        cpus=info.cpu_limit,
        init_timeout=float(info.init_time_limit),
        move_timeout=float(info.move_time_limit),
    )


def _tail(text: str) -> str:
    return text if len(text) <= ERROR_LOG_CHARS else "..." + text[-ERROR_LOG_CHARS:]


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
        agent=session.revision.agent_ref, limits=limits, labels={"play_session": str(session.pk)}
    )
    poll_s = play_setting("PLAY_POLL_SECONDS", 0.1)
    idle_s = inactivity_timeout()
    sandbox = get_sandbox(settings.SANDBOX)
    agent: LiveAgent | None = None
    try:
        agent = LiveAgent(sandbox.launch(spec), limits, session.agent_seat)
        try:
            agent.await_ready()
            outcome = _loop(claim, game, agent, poll_s, idle_s)
        except AgentFault as fault:
            stderr = agent.proc.stderr_log()
            message = fault.message + (
                f"\nLast lines of the agent's stderr:\n{_tail(stderr)}" if stderr else ""
            )
            retry_on_db_error(
                partial(
                    end_play_session,
                    session.pk,
                    AGENT_ERROR,
                    claim=claim,
                    kind=fault.kind,
                    message=message,
                    log=stderr,
                )
            )
            return {"outcome": "agent error"}
        final = PlaySession.objects.get(pk=session.pk)
        if game.is_over(final.state):
            rewards = game.rewards(final.state)
            agent.end(game.observation(final.state, agent.seat).tolist(), rewards[agent.seat])
        save_agent_log(claim, agent.proc.stderr_log())
        return {"outcome": outcome}
    finally:
        if agent is not None:
            agent.close()
        sandbox.close()


def _loop(claim: Claim, game: Any, agent: LiveAgent, poll_s: float, idle_s: float) -> str:
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
        if game.to_move(state) == agent.seat:
            obs = game.observation(state, agent.seat).tolist()
            action, elapsed = agent.choose(obs, game.legal_actions(state), session.moves)
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
