"""Live play against an agent and challenges: each view parses input and calls one action.

``/competitors/<id>/play/`` (POST) opens a game and redirects to ``/play/<id>/``; that page draws the
board with the game's renderer (clickable legal moves), posts the person's moves to
``/play/<id>/move/`` and polls ``/play/<id>/state/`` until the game ends, then shows the replay.
``/competitors/<id>/challenge/`` (POST) queues an unrated duel and redirects to its page.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from core.actions import ActionError
from core.actions.challenge import issue_challenge
from core.actions.play import (
    ENDED_BY_PLAYER,
    IllegalMoveError,
    end_by_player,
    games_ahead,
    human_move,
    inactivity_timeout,
    live_games,
    start_play_session,
)
from core.models import PlaySession
from web import queries
from web.error_privacy import play_detail, play_sentence
from web.replays import replay_states


def _session(pk: int) -> PlaySession:
    return get_object_or_404(
        PlaySession.objects.select_related("environment", "user", "revision__competitor__owner"), pk=pk
    )


def _names(session: PlaySession) -> tuple[str, str]:
    """(human, agent) display names."""
    agent = f"{session.revision.competitor.name} v{session.revision.version}"
    return session.user.public_name, agent


def result_sentence(session: PlaySession, human: str, agent: str, user: Any) -> str:
    """How the game ended, as a sentence naming the players (``"You won."`` for the person who played;
    ``""`` while it runs). The model's choice labels ("the human won") are for the admin."""
    you = session.user_id == getattr(user, "pk", None)
    winner = "You" if you else human
    R = PlaySession.Result
    if session.result == R.ABANDONED and session.error_kind == ENDED_BY_PLAYER:
        return "You ended the game." if you else f"{human} ended the game."
    sentences: dict[str, str] = {
        R.HUMAN_WIN: f"{winner} won.",
        R.AGENT_WIN: f"{agent} won.",
        R.DRAW: "It is a draw.",
        R.AGENT_ERROR: f"{agent} broke the rules, so {'you win' if you else human + ' wins'}.",
        R.ABANDONED: "Nobody moved in time, so the game was closed.",
        R.FAILED: "The game could not go on because of an error on our side.",
    }
    return sentences.get(session.result, "")


def waiting_behind(session: PlaySession) -> int:
    """How many of the person's earlier games must end before this QUEUED one may start (0: it may)."""
    if session.status != PlaySession.Status.QUEUED:
        return 0
    return max(0, games_ahead(session) - settings.PLAY_MAX_LIVE_PER_USER + 1)


def session_json(session: PlaySession, user: Any) -> dict[str, Any]:
    """What the play page needs: the state, whose turn it is, the legal moves, how it ended."""
    from environments import get_game

    game = get_game(session.environment.slug)
    over = session.status == PlaySession.Status.FINISHED
    human, agent = _names(session)
    running = session.status == PlaySession.Status.PLAYING and not game.is_over(session.state)
    your_turn = running and game.to_move(session.state) == session.human_seat
    seats = [human, agent] if session.human_seat == 0 else [agent, human]
    replay: tuple[list[Any], list[Any]] = ([], [])
    if over:
        replay = replay_states(session.environment.slug, session.states, session.actions, seats)
    data = {
        "id": session.pk,
        "environment": session.environment.slug,
        "status": session.status,
        "result": session.result,
        "result_display": result_sentence(session, human, agent, user),
        "error_kind": session.error_kind,
        # Everyone: the platform's sentence; the agent's error and stderr only to its owner and staff.
        "error_msg": play_sentence(
            session.result, session.error_kind, agent, session.moves, session.error_msg
        ),
        "error_detail": play_detail(
            session.result, session.error_msg, user, session.revision.competitor.owner_id
        ),
        # Over the person's cap of live games (PLAY_MAX_LIVE_PER_USER), a game waits for an earlier one.
        "waiting_behind": waiting_behind(session),
        "live_cap": settings.PLAY_MAX_LIVE_PER_USER,
        "human_seat": session.human_seat,
        "moves": session.moves,
        # While the game runs, only what the person's seat may see (Leduc: not the agent's card).
        "state": game.redact(session.state, session.human_seat) if running else session.state,
        "your_turn": bool(your_turn and session.user_id == getattr(user, "pk", None)),
        "legal_actions": game.legal_actions(session.state) if your_turn else [],
        "seats": seats,
        # The replay viewer's shape (players = PLAYER_1, PLAYER_2 = the human, the agent).
        "players": [human, agent],
        "first_player": "PLAYER_1" if session.human_seat == 0 else "PLAYER_2",
        "states": replay[0] if over else [],
        "move_details": replay[1] if over else [],  # "moves" is the count above
        "actions": session.actions if over else [],
        "move_times": session.move_times if over else [],
    }
    return data


@login_required
@require_POST
def play_start(request: HttpRequest, pk: int) -> HttpResponse:
    """Open a game against competitor ``pk``'s playing revision."""
    try:
        session = start_play_session(request.user, pk, human_first=request.POST.get("first") != "agent")
    except ActionError as exc:
        messages.error(request, str(exc))
        return redirect("web:competitor", pk=pk)
    if getattr(session, "resumed", False):  # one live game per opponent: back to the running one
        messages.info(request, "You already have a live game against this agent: here it is.")
    return redirect("web:play", pk=session.pk)


@login_required
@require_GET
def my_live_games(request: HttpRequest) -> HttpResponse:
    """The person's unfinished games, each with a link and an "End" button."""
    return render(request, "web/play/live_games.html", {"games": live_games(request.user)})


@login_required
@require_POST
def play_end(request: HttpRequest, pk: int) -> HttpResponse:
    """The person ends one of their live games (the agent is stopped)."""
    try:
        ended = end_by_player(pk, request.user)
    except ActionError as exc:
        raise Http404(str(exc)) from exc
    if ended:
        messages.success(request, f"Live game {pk} ended.")
    if request.POST.get("next") == "game":
        return redirect("web:play", pk=pk)
    return redirect("web:live-games")


@require_GET
def play(request: HttpRequest, pk: int) -> HttpResponse:
    """The board: the person plays by clicking; anyone may watch."""
    session = _session(pk)
    data = session_json(session, request.user)
    context = {
        "session": session,
        "environment": session.environment,
        "competitor": session.revision.competitor,
        "data": data,
        "is_player": session.user_id == request.user.pk,
        "inactivity_s": int(inactivity_timeout()),
        "show_log": queries.can_see_private(request.user, session.revision.competitor.owner_id),
        "renderer_path": f"games/{session.environment.slug}/renderer.js",
    }
    # Without JavaScript: the legal moves in the game's words, each a form button (see play_move).
    context["plain_moves"] = plain_moves(session, data)
    return render(request, "web/play.html", context)


def plain_moves(session: PlaySession, data: dict[str, Any]) -> list[tuple[int, str]]:
    """``(action, words)`` for each legal move when it is the viewing person's turn, else ``[]``."""
    if not data["your_turn"]:
        return []
    from environments import get_game

    game = get_game(session.environment.slug)
    return [(a, game.describe_action(session.state, a)) for a in data["legal_actions"]]


@require_GET
def play_state(request: HttpRequest, pk: int) -> JsonResponse:
    """The session as JSON (polled by the page)."""
    return JsonResponse(session_json(_session(pk), request.user))


@require_POST
def play_move(request: HttpRequest, pk: int) -> HttpResponse:
    """The person's move: ``{"action": N}`` (JSON) or ``action=N`` (form). Illegal moves get a 400 with a
    message; a legal one returns the new state."""
    if not request.user.is_authenticated:
        return JsonResponse({"error": "Sign in to play."}, status=403)
    # A form posted without JavaScript (the page's <noscript> moves) gets the page back, not JSON.
    wants_json = "json" in request.headers.get("Accept", "")
    if request.content_type != "application/json" and not wants_json:
        try:
            human_move(pk, request.user, int(request.POST.get("action", "")))
        except ValueError:
            messages.error(request, "Choose one of the moves.")
        except IllegalMoveError as exc:
            messages.error(request, str(exc))
        except ActionError as exc:
            raise Http404(str(exc)) from exc
        return redirect("web:play", pk=pk)
    try:
        if request.content_type == "application/json":
            raw = json.loads(request.body or b"{}").get("action")
        else:
            raw = request.POST.get("action")
        digits = isinstance(raw, str) and raw.strip().lstrip("-").isdigit()
        action = int(raw) if digits else raw  # JSON ints pass as they are; anything else is refused
    except (ValueError, AttributeError):
        return JsonResponse({"error": 'Send the move as {"action": N}.'}, status=400)
    try:
        session = human_move(pk, request.user, action)
    except IllegalMoveError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    except ActionError as exc:
        raise Http404(str(exc)) from exc
    session = _session(session.pk)
    return JsonResponse(session_json(session, request.user))


@login_required
@require_POST
def challenge(request: HttpRequest, pk: int) -> HttpResponse:
    """Challenge competitor ``pk`` with one of the person's own competitors (an unrated duel)."""
    try:
        challenger = int(request.POST.get("challenger", ""))
    except ValueError:
        messages.error(request, "Choose one of your competitors.")
        return redirect("web:competitor", pk=pk)
    try:
        duel = issue_challenge(request.user, challenger, pk)
    except ActionError as exc:
        messages.error(request, str(exc))
        return redirect("web:competitor", pk=pk)
    messages.success(request, "Challenge queued: this page follows the duel live.")
    return redirect("web:duel", pk=duel.pk)
