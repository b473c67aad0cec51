"""State changes of live play (a person against an agent): start, claim, moves, the end.

The web calls ``start_play_session`` and ``human_move``; the worker task ``duel_runner.play_session``
calls ``claim_play_session``, ``agent_move`` and ``end_play_session``. Every move is applied with the
game's rules under a row lock and only on the mover's turn, so the two writers never collide. Sessions
are never rated (they are not duels).
"""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from core.actions.errors import ActionError
from core.actions.jobs import Claim, claim_job, db_in, db_now, lock_claimed, lock_expired
from core.models import Competitor, PlaySession, Revision
from core.queue import enqueue_on_commit


class IllegalMoveError(ActionError):
    """The human's move is not legal (or not theirs to make); the message says why."""


def play_setting(name: str, default: float) -> float:
    """A live-play setting: ``settings.<name>`` (parsed from the environment by ``core.settings``), else
    ``default``."""
    value = getattr(settings, name, None)
    return default if value is None else float(value)


def inactivity_timeout() -> float:
    """Seconds a person may leave the board before the session is abandoned and the agent stopped."""
    return play_setting("PLAY_INACTIVITY_SECONDS", 120.0)


def can_play_against(user: Any, competitor: Competitor) -> bool:
    """Public competitors are open to every signed-in person; private ones to their owner (and staff)."""
    if not getattr(user, "is_authenticated", False):
        return False
    return competitor.is_public or competitor.owner_id == user.pk or bool(user.is_staff)


def _game(slug: str) -> Any:
    from environments import get_game  # the rules are pure: importing them here is cheap

    return get_game(slug)


def start_play_session(user: Any, competitor_id: int, *, human_first: bool = True) -> PlaySession:
    """Open a match between ``user`` and the competitor's playing (ELIGIBLE) revision; a worker launches
    the agent once the transaction commits. One live game per opponent: when ``user`` already has an
    unfinished game against this competitor, that game is returned (``resumed`` set) and none is opened."""
    competitor = (
        Competitor.objects.select_related("environment", "current_revision").filter(pk=competitor_id).first()
    )
    if competitor is None or not can_play_against(user, competitor):
        raise ActionError("No such competitor to play against.")
    revision = competitor.current_revision
    if revision is None or revision.state != Revision.State.ELIGIBLE or not revision.agent_ref:
        raise ActionError(f"{competitor.name} has no playable revision yet.")
    game = _game(competitor.environment.slug)
    now = timezone.now()
    # Games with chance deal from a fresh seed; their states, like a duel's, start with the deal.
    initial = game.initial_state(secrets.randbelow(2**31))
    with transaction.atomic():
        # The person's row lock orders two clicks at once: the second sees the first one's game.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        running = live_game_against(user, competitor.pk)
        if running is not None:
            running.resumed = True
            return running
        session = PlaySession.objects.create(
            user=user,
            environment=competitor.environment,
            revision=revision,
            human_seat=0 if human_first else 1,
            state=initial,
            states=[initial] if game.has_chance else [],
            last_activity_at=now,
        )
        admit_waiting_games(user.pk)
    return session


def live_game_against(user: Any, competitor_id: int) -> PlaySession | None:
    """``user``'s unfinished game against competitor ``competitor_id`` (any of its revisions), if any."""
    return (
        PlaySession.objects.filter(user_id=user.pk, revision__competitor_id=competitor_id)
        .exclude(status=PlaySession.Status.FINISHED)
        .order_by("pk")
        .first()
    )


def live_games(user: Any) -> list[PlaySession]:
    """``user``'s unfinished games, oldest first, with their opponents (one query)."""
    return list(
        PlaySession.objects.filter(user_id=user.pk)
        .exclude(status=PlaySession.Status.FINISHED)
        .select_related("environment", "revision__competitor")
        .order_by("pk")
    )


ENDED_BY_PLAYER = "ENDED"  # error_kind of a game its person ended (result ABANDONED)


def end_by_player(session_id: int, user: Any) -> bool:
    """The person ends their own live game (``ABANDONED``, kind ``ENDED``): the worker stops the agent and
    the person's next waiting game may start. ``False`` if it was already over."""
    session = PlaySession.objects.filter(pk=session_id).only("user_id").first()
    if session is None or session.user_id != getattr(user, "pk", None):
        raise ActionError("No such live game of yours.")
    return end_play_session(
        session_id, PlaySession.Result.ABANDONED, kind=ENDED_BY_PLAYER, message="Ended by the player."
    )


def games_ahead(session: PlaySession) -> int:
    """How many of the same person's unfinished games were opened before ``session``."""
    return (
        PlaySession.objects.filter(user_id=session.user_id, pk__lt=session.pk)
        .exclude(status=PlaySession.Status.FINISHED)
        .count()
    )


def admit_waiting_games(user_id: int) -> None:
    """Send, on commit, the hint of each QUEUED game of ``user_id`` among their first
    ``PLAY_MAX_LIVE_PER_USER`` unfinished ones (oldest first): only those may be claimed by a worker
    (:func:`claim_play_session`), so one person holds at most that many worker slots; the others wait,
    in order, for one of these to end. A second hint for a game is harmless: claiming is atomic."""
    cap = settings.PLAY_MAX_LIVE_PER_USER
    first = (
        PlaySession.objects.filter(user_id=user_id)
        .exclude(status=PlaySession.Status.FINISHED)
        .order_by("pk")
        .values_list("pk", "status")[:cap]
    )
    admitted = [session_id for session_id, status in list(first) if status == PlaySession.Status.QUEUED]
    # A game that waited behind the cap starts its idle clock now (the reaper's abandonment counts from it).
    PlaySession.objects.filter(pk__in=admitted).update(last_activity_at=db_now())
    for session_id in admitted:
        enqueue_on_commit(PlaySession.task_name, session_id)


def claim_play_session(session_id: int, worker: str | None = None) -> PlaySession | None:
    """The worker that will run the agent takes a QUEUED session, or a PLAYING one whose worker stopped
    sending heartbeats (the game resumes from its stored state with a fresh agent). ``None``: someone else
    has it, or it is over. The inactivity clock restarts now, when the agent is about to be launched."""
    waiting = PlaySession.objects.filter(pk=session_id).only("pk", "user_id").first()
    if waiting is None or games_ahead(waiting) >= settings.PLAY_MAX_LIVE_PER_USER:
        # Over the person's cap: it waits; the end of an earlier game sends its hint (admit_waiting_games).
        # Nothing can push it back once admitted: only games opened earlier count, and they only end.
        return None
    with transaction.atomic():
        session = claim_job(PlaySession, session_id, worker)
        if session is None:
            return None
        now = timezone.now()
        PlaySession.objects.filter(pk=session_id, started_at__isnull=True).update(started_at=now)
        PlaySession.objects.filter(pk=session_id).update(last_activity_at=now)
        session.last_activity_at = now
    return session


def _finish(session: PlaySession, result: str, kind: str = "", message: str = "") -> None:
    session.status = PlaySession.Status.FINISHED
    session.result = result
    session.error_kind = kind
    session.error_msg = message
    session.finished_at = timezone.now()
    user_id = session.user_id
    # The game frees one of its person's live slots: their next waiting game may start (after commit,
    # when this end is visible to the claim's count).
    transaction.on_commit(lambda: admit_waiting_games(user_id))


def _apply(session: PlaySession, action: int, move_time: float | None) -> None:
    """Play ``action`` for the side to move (already checked to be legal), finishing a decided game."""
    game = _game(session.environment.slug)
    state = game.apply(session.state, action)
    session.state = state
    session.actions = [*session.actions, action]
    session.states = [*session.states, state]
    session.move_times = [*session.move_times, move_time]
    session.moves += 1
    if game.is_over(state):
        winner = game.winner(state)
        if winner is None:
            _finish(session, PlaySession.Result.DRAW)
        else:
            _finish(
                session,
                PlaySession.Result.HUMAN_WIN
                if winner == session.human_seat
                else PlaySession.Result.AGENT_WIN,
            )


def _locked(session_id: int) -> PlaySession:
    session = (
        PlaySession.objects.select_for_update().select_related("environment").filter(pk=session_id).first()
    )
    if session is None:
        raise ActionError("No such game.")
    return session


def _holds(session: PlaySession, claim: Claim | None) -> bool:
    """Whether ``claim`` (the agent's worker) still holds the locked session; ``None`` is not a worker."""
    return claim is None or session.generation == claim.generation


def human_move(session_id: int, user: Any, action: Any) -> PlaySession:
    """Store the person's move after checking it with the game's rules. Raises ``IllegalMoveError`` (with
    a message for the person) for a move that is not legal, not theirs, or too late."""
    from environments import IllegalActionError

    if type(action) is not int:
        raise IllegalMoveError(f"A move is a whole number, not {str(action)[:40]!r}.")
    with transaction.atomic():
        session = _locked(session_id)
        if session.user_id != getattr(user, "pk", None):
            raise IllegalMoveError("This is someone else's game.")
        if session.status == PlaySession.Status.QUEUED:
            raise IllegalMoveError("The agent is still starting; wait a moment.")
        if session.status != PlaySession.Status.PLAYING:
            raise IllegalMoveError(f"This game is over ({session.get_result_display()}).")
        game = _game(session.environment.slug)
        if game.to_move(session.state) != session.human_seat:
            raise IllegalMoveError("It is the agent's turn.")
        try:
            _apply(session, action, None)
        except IllegalActionError as exc:
            raise IllegalMoveError(f"Illegal move: {exc}") from exc
        session.last_activity_at = timezone.now()
        session.save()
    return session


def agent_move(claim: Claim, action: int, move_time: float) -> PlaySession | None:
    """Store the agent's (already validated) move; ``None`` if the session ended meanwhile, it is not the
    agent's turn, or ``claim`` lost the session to another worker (fencing)."""
    with transaction.atomic():
        session = _locked(claim.job_id)
        if session.status != PlaySession.Status.PLAYING or not _holds(session, claim):
            return None
        game = _game(session.environment.slug)
        if game.is_over(session.state) or game.to_move(session.state) != session.agent_seat:
            return None
        if action not in game.legal_actions(session.state):
            raise ActionError(f"the agent's move {action} was not checked before storing it")
        _apply(session, action, round(move_time, 6))
        session.last_activity_at = timezone.now()
        session.save()
    return session


def end_play_session(
    session_id: int,
    result: str,
    *,
    claim: Claim | None = None,
    kind: str = "",
    message: str = "",
    log: str = "",
) -> bool:
    """End a running session without a decided game: the agent failed (``AGENT_ERROR``: the human
    wins), the person walked away (``ABANDONED``) or our side failed (``FAILED``). ``False`` if it was
    already over (only the agent's log is then added) or, for a worker's ``claim``, if another worker
    holds it now (fencing: nothing is written)."""
    if result not in (
        PlaySession.Result.AGENT_ERROR,
        PlaySession.Result.ABANDONED,
        PlaySession.Result.FAILED,
    ):
        raise ValueError(f"not an ending for an undecided game: {result!r}")
    cap = settings.PLAYER_LOG_MAX_CHARS
    with transaction.atomic():
        session = _locked(session_id)
        if not _holds(session, claim):
            return False
        if log:
            session.agent_log = log[-cap:]
        if session.status == PlaySession.Status.FINISHED:
            session.save(update_fields=["agent_log"])
            return False
        _finish(session, result, kind, message)
        session.save()
    return True


def save_agent_log(claim: Claim, log: str) -> None:
    """Keep the tail of the agent's stderr on the session (shown to the agent's owner), if ``claim``
    still holds it."""
    PlaySession.objects.filter(pk=claim.job_id, generation=claim.generation).update(
        agent_log=log[-settings.PLAYER_LOG_MAX_CHARS :]
    )


def requeue_play_session(claim: Claim) -> bool:
    """The worker holding ``claim`` cannot run the agent (it is unhealthy): the game goes back to the
    queue for another worker, which resumes it from its stored state."""
    with transaction.atomic():
        session = lock_claimed(PlaySession, claim)
        if session is None:
            return False
        session.status = PlaySession.Status.QUEUED
        session.worker = ""
        session.lease_expires_at = None
        session.save(update_fields=["status", "worker", "lease_expires_at"])
        enqueue_on_commit(
            PlaySession.task_name, session.pk, countdown=settings.WORKER_HEALTH_INTERVAL_SECONDS
        )
    return True


def requeue_orphaned_play_sessions() -> int:
    """Hand PLAYING sessions whose worker stopped sending heartbeats (database time) to another worker:
    the game resumes from its stored state with a fresh agent. Returns how many were re-queued."""
    expired = PlaySession.objects.filter(
        status=PlaySession.Status.PLAYING, lease_expires_at__lt=db_now()
    ).values_list("pk", flat=True)[:500]
    requeued = 0
    for session_id in list(expired):
        with transaction.atomic():
            session = lock_expired(PlaySession, session_id)
            if session is None:
                continue
            session.status = PlaySession.Status.QUEUED
            session.worker = ""
            session.lease_expires_at = None
            session.save(update_fields=["status", "worker", "lease_expires_at"])
            enqueue_on_commit(PlaySession.task_name, session_id)
            requeued += 1
    return requeued


def abandon_stale_play_sessions(max_idle_s: float | None = None) -> int:
    """End sessions nobody drives any more: idle far beyond the inactivity timeout (their worker died,
    or the hint was lost), by the database's clock (a reaper whose clock is wrong closes no live game).
    Returns how many were ended.

    A game waiting behind its person's cap (:func:`admit_waiting_games`) is not abandoned: nobody was meant
    to drive it yet. It waits for the person's earlier games, which end by their own inactivity clock, and
    its clock starts when a worker claims it."""
    idle = max_idle_s if max_idle_s is not None else 3 * inactivity_timeout() + 60
    cutoff = db_in(-idle)
    stale = PlaySession.objects.filter(
        status__in=(PlaySession.Status.QUEUED, PlaySession.Status.PLAYING), last_activity_at__lt=cutoff
    )
    waiting = [
        session.pk
        for session in stale.filter(status=PlaySession.Status.QUEUED).only("pk", "user_id")[:500]
        if games_ahead(session) >= settings.PLAY_MAX_LIVE_PER_USER
    ]
    stale = stale.exclude(pk__in=waiting)
    with transaction.atomic():
        users = set(stale.values_list("user_id", flat=True))
        closed = stale.update(
            status=PlaySession.Status.FINISHED,
            result=PlaySession.Result.FAILED,
            error_msg="The game was left without a worker and has been closed.",
            finished_at=db_now(),
        )
        for user_id in users:
            admit_waiting_games(user_id)
    return closed
