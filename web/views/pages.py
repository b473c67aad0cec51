"""Server-rendered pages: home, game, competitor, revision, duel, match replay."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from core import blobs
from core.actions.pair_records import RATED_KINDS
from core.models import Competitor, Duel, Environment, Match, Rating, Revision
from web import queries
from web.charts import rating_chart
from web.duels import headline as duel_headline
from web.duels import outcome_for as duel_outcome_for
from web.duels import rating_story
from web.duels import sides as duel_sides
from web.duels import stop_note as duel_stop_note
from web.error_privacy import duel_detail, duel_sentence, match_detail, match_sentence
from web.game_boards import latest_boards
from web.progress import build_verdict, revision_progress, smoke_verdict
from web.rendering import render_markdown
from web.replays import match_result_text, replay_states
from web.standing import standings
from web.views.kits import starter_kit_dir
from web.worker_notice import no_worker_notice

LEADERBOARD_REFRESH_SECONDS = 15
#: How often a running duel's page asks for the matches played so far.
DUEL_REFRESH_SECONDS = 2
#: Rows shown on the game page unless the visitor asks for all of them.
LEADERBOARD_TOP = 100
#: Opponents listed in a competitor's head-to-head table (the most played first).
HEAD_TO_HEAD_TOP = 30
#: Duels per page of a competitor's history.
HISTORY_PAGE_SIZE = 25


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """The games with their counts, and what happened lately."""
    envs = queries.environments_with_counts()
    for e in envs:
        e.has_starter_kit = starter_kit_dir(e.slug) is not None  # type: ignore[attr-defined]  # for the template
    context = {
        "environments": envs,
        "total_competitors": sum(e.num_competitors for e in envs),
        "total_duels": sum(e.num_duels for e in envs),
        "recent_duels": queries.recent_duels(limit=10),
        "recent_revisions": queries.recent_revisions(limit=8),
        "latest_boards": latest_boards(envs),  # each card's board: its latest duel's (one query)
    }
    return render(request, "web/home.html", context)


def _environment(slug: str) -> Environment:
    return get_object_or_404(Environment, slug=slug, is_active=True)


def _leaderboard_context(request: HttpRequest, env: Environment) -> dict:
    """Context for the leaderboard fragment: the top ``LEADERBOARD_TOP`` rows, or all with ``?all=1``.

    ``rows`` is computed lazily: the template's cache tag only asks for it when the fragment for this
    ratings version, length and minute is not cached yet.
    """
    show_all = request.GET.get("all") == "1"

    def rows() -> dict:
        ranked = queries.leaderboard(env)
        return {"rows": ranked if show_all else ranked[:LEADERBOARD_TOP], "total": len(ranked)}

    return {
        "environment": env,
        "board": rows,
        "show_all": show_all,
        "leaderboard_version": queries.leaderboard_version(env),
        "minute": int(time.time() // 60),
        "refresh_seconds": LEADERBOARD_REFRESH_SECONDS,
        "competitor_url_prefix": reverse("web:competitor", args=[0])[:-2],
    }


@require_GET
def game(request: HttpRequest, slug: str) -> HttpResponse:
    """A game: its rules, live leaderboard, tournament editions and recent duels."""
    env = _environment(slug)
    context = {
        **_leaderboard_context(request, env),
        "rules": render_markdown(env.description),
        "tournaments": queries.tournaments(env),
        "recent_duels": queries.recent_duels(env, limit=10),
        "has_starter_kit": starter_kit_dir(env.slug) is not None,
        "intransitivity": queries.intransitivity(env),
    }
    context["latest_boards"] = latest_boards([env])  # the board: its latest duel's (one query)
    context["latest_board"] = context["latest_boards"].get(env.slug)
    return render(request, "web/game.html", context)


@require_GET
def leaderboard_partial(request: HttpRequest, slug: str) -> HttpResponse:
    """The leaderboard table alone, polled by the game page to stay live."""
    env = _environment(slug)
    return render(request, "web/partials/leaderboard.html", _leaderboard_context(request, env))


@dataclass(frozen=True)
class HistoryFilters:
    """The competitor page's duel-history filters, parsed from the query string (bad values ignored)."""

    opponent: int | None = None
    outcome: str = ""
    errors: str = ""

    @classmethod
    def parse(cls, params: Any) -> HistoryFilters:
        """From ``request.GET``: ``opponent`` (a competitor id), ``result`` and ``errors``."""
        opponent = params.get("opponent", "")
        outcome = params.get("result", "")
        errors = params.get("errors", "")
        return cls(
            opponent=int(opponent) if opponent.isdigit() else None,
            outcome=outcome if outcome in queries.OUTCOMES else "",
            errors=errors if errors in queries.ERROR_FILTERS else "",
        )

    @property
    def active(self) -> bool:
        """Whether any filter is set."""
        return bool(self.opponent or self.outcome or self.errors)

    def query(self, page: int | None = None) -> str:
        """The query string for these filters (and a page), without the leading ``?``."""
        params = {"opponent": self.opponent or "", "result": self.outcome, "errors": self.errors}
        if page and page > 1:
            params["page"] = page
        return urlencode({k: v for k, v in params.items() if v})


@dataclass
class HistoryRow:
    """One duel of a competitor's history, from its side."""

    duel: Duel
    outcome: str
    mine: Revision
    theirs: Revision
    my_score: float | None
    their_score: float | None
    my_errors: int
    their_errors: int
    change: queries.RatingChange | None


def _history_rows(comp: Competitor, duels: list[Duel], rating: Rating | None) -> list[HistoryRow]:
    changes = queries.rating_changes(rating, [d.pk for d in duels])
    rows = []
    for d in duels:
        first = d.revision_1.competitor_id == comp.pk
        me, them = (1, 2) if first else (2, 1)
        rows.append(
            HistoryRow(
                duel=d,
                outcome=duel_outcome_for(d, comp.pk),
                mine=d.revision_1 if first else d.revision_2,
                theirs=d.revision_2 if first else d.revision_1,
                my_score=getattr(d, f"player_{me}_score"),
                their_score=getattr(d, f"player_{them}_score"),
                my_errors=getattr(d, f"player_{me}_errors"),
                their_errors=getattr(d, f"player_{them}_errors"),
                change=changes.get(d.pk) if d.kind in RATED_KINDS else None,
            )
        )
    return rows


@require_GET
def competitor(request: HttpRequest, pk: int) -> HttpResponse:
    """A competitor: revisions with their states and ratings (logs for owner and staff), the rating plot,
    its duel history (filtered and paged), head to head, and for owner and staff its stored data."""
    comp = get_object_or_404(
        Competitor.objects.select_related("owner", "environment", "current_revision"), pk=pk
    )
    private = queries.can_see_private(request.user, comp.owner_id)
    revisions = queries.competitor_revisions(comp, with_logs=private)
    rating = Rating.objects.filter(competitor=comp, environment_id=comp.environment_id).first()
    revision_ids = [rev.pk for rev in revisions]
    records = queries.revision_records(rating, revision_ids)
    rows = []
    for rev in revisions:
        build = queries.latest(rev.builds)
        smoke = queries.latest(rev.smoke_tests)
        rows.append(
            {
                "revision": rev,
                "build": build,
                "smoke": smoke,
                "build_verdict": build_verdict(build),
                "smoke_verdict": smoke_verdict(smoke),
                "progress": revision_progress(rev, build, smoke),
                "record": records.get(rev.pk),
            }
        )
    filters = HistoryFilters.parse(request.GET)
    history = queries.duel_history(
        comp, revision_ids, opponent_id=filters.opponent, outcome=filters.outcome, errors=filters.errors
    )
    page = Paginator(history, HISTORY_PAGE_SIZE).get_page(request.GET.get("page"))
    h2h = queries.head_to_head(comp, revision_ids)
    context = {
        "competitor": comp,
        "environment": comp.environment,
        "can_see_private": private,
        "revision_rows": rows,
        "rating": rating,
        "chart": rating_chart(queries.rating_points(rating)),
        "history": _history_rows(comp, list(page.object_list), rating),
        "page": page,
        "filters": filters,
        "opponents": queries.opponents(comp, revision_ids),
        "outcome_choices": [("won", "won"), ("lost", "lost"), ("draw", "draw")],
        "error_choices": [
            ("own", "its own errors"),
            ("opponent", "the opponent's errors"),
            ("any", "any errors"),
        ],
        "head_to_head": h2h[:HEAD_TO_HEAD_TOP],
        "head_to_head_total": len(h2h),
        # The data folder: owner and staff only (so never in the page cached for anonymous visitors).
        "stored_data": queries.stored_data(comp) if private else None,
    }
    return render(request, "web/competitor.html", context)


def _revision(pk: int) -> Revision:
    return get_object_or_404(
        Revision.objects.select_related("competitor__owner", "competitor__environment"), pk=pk
    )


def _revision_context(request: HttpRequest, rev: Revision) -> dict:
    private = queries.can_see_private(request.user, rev.competitor.owner_id)
    builds = rev.builds.order_by("-created_at")
    smokes = rev.smoke_tests.order_by("-created_at").defer("duel_json")
    if not private:
        builds = builds.defer("log")
        smokes = smokes.defer("log")
    build = builds.first()
    smoke = smokes.first()
    progress = revision_progress(rev, build, smoke)
    return {
        "revision": rev,
        "competitor": rev.competitor,
        "environment": rev.competitor.environment,
        "build": build,
        "smoke": smoke,
        "progress": progress,
        "can_see_private": private,
        "no_worker": None if progress.is_final else no_worker_notice(),
    }


@require_GET
def revision(request: HttpRequest, pk: int) -> HttpResponse:
    """A revision: live progress through build and smoke test, failures explained, logs for the owner."""
    rev = _revision(pk)
    return render(request, "web/revision.html", _revision_context(request, rev))


@require_GET
def revision_status(request: HttpRequest, pk: int) -> HttpResponse:
    """The progress panel alone, polled by htmx; once the revision is final the page reloads itself."""
    rev = _revision(pk)
    context = _revision_context(request, rev)
    response = render(request, "web/partials/revision_status.html", context)
    if context["progress"].is_final and request.headers.get("HX-Request"):
        # Reload the whole page once: it then shows the logs and no longer polls.
        response["HX-Refresh"] = "true"
    return response


@require_GET
def revision_download(request: HttpRequest, pk: int) -> FileResponse:
    """The uploaded zip: anyone for a public revision, otherwise the owner and staff only."""
    rev = _revision(pk)
    if not (rev.is_public or queries.can_see_private(request.user, rev.competitor.owner_id)):
        raise Http404("No such source.")
    try:
        # This host's cached zip, or the upload store's copy (still readable once its temporary file is
        # removed on leaving the block).
        with blobs.local_copy(rev) as path:
            handle = path.open("rb")
    except blobs.BlobUnavailable:
        raise Http404("The source file is missing.") from None
    filename = f"{rev.competitor.name}-v{rev.version}.zip"
    return FileResponse(handle, as_attachment=True, filename=filename, content_type="application/zip")


def _duel(pk: int) -> Duel:
    return get_object_or_404(
        Duel.objects.select_related(
            "environment", "tournament", "revision_1__competitor__owner", "revision_2__competitor__owner"
        ).defer("player_1_log", "player_2_log"),
        pk=pk,
    )


def _duel_matches(d: Duel) -> list[Match]:
    return list(
        d.matches.order_by("index").only(
            "id",
            "duel_id",
            "index",
            "result",
            "error_kind",
            "first_player",
            "player_1_score",
            "player_2_score",
            "packed_moves",  # the actions (core.match_moves), for the number of moves
        )
    )


def _duel_context(request: HttpRequest, d: Duel) -> dict:
    matches = _duel_matches(d)
    names = (d.revision_1.competitor.name, d.revision_2.competitor.name)
    for m in matches:  # the public sentence; the referee's text stays on the match page for its owner
        sentence = match_sentence(m.result, m.error_kind, names, len(m.actions or []))
        m.public_error = sentence  # type: ignore[attr-defined]  # for the template
    side_1, side_2 = duel_sides(d, matches)
    live = d.state in (Duel.State.QUEUED, Duel.State.RUNNING)
    return {
        "duel": d,
        "environment": d.environment,
        "matches": matches,
        "sides": (side_1, side_2),
        "headline": duel_headline(d, side_1, side_2),
        "stop_note": duel_stop_note(d, side_1, side_2),
        "live": live,
        "expected_matches": d.num_matches or d.environment.matches_per_duel,
        "refresh_seconds": DUEL_REFRESH_SECONDS,
        "duel_error": duel_sentence(d.result, d.error_msg),
        "duel_error_detail": duel_detail(d.error_msg, request.user),
    }


@require_GET
def duel(request: HttpRequest, pk: int) -> HttpResponse:
    """A duel: who won and how, each side's rating change, its matches (live while it runs), and the
    player logs for each player's owner and staff."""
    d = _duel(pk)
    context = _duel_context(request, d)
    if d.rated and d.kind in RATED_KINDS:  # a challenge is counted as played, never rated
        changes = queries.duel_rating_changes(d)
        places = standings(d.environment, [side.competitor_id for side in context["sides"]])
        for side, change in zip(context["sides"], changes, strict=True):
            side.rating = change
            side.standing = places.get(side.competitor_id)
            if change is not None:
                side.rating_story = rating_story(change, duel_outcome_for(d, side.competitor_id))
                if side.standing is not None:  # the leaderboard's own order, never another one
                    side.rating_story.append(side.standing.sentence())
    show = [
        queries.can_see_private(request.user, d.revision_1.competitor.owner_id),
        queries.can_see_private(request.user, d.revision_2.competitor.owner_id),
    ]
    fields = [f"player_{i + 1}_log" for i in range(2) if show[i]]
    logs = Duel.objects.filter(pk=d.pk).values(*fields).first() if fields else {}
    context["logs"] = [
        (context["sides"][i], (logs or {}).get(f"player_{i + 1}_log", "")) for i in range(2) if show[i]
    ]
    return render(request, "web/duel.html", context)


@require_GET
def duel_matches(request: HttpRequest, pk: int) -> HttpResponse:
    """The duel's matches and score so far, polled by its page while it is queued or running; once it is
    over, htmx reloads the whole page (``HX-Refresh``) to show the result and the ratings."""
    d = _duel(pk)
    context = _duel_context(request, d)
    response = render(request, "web/partials/duel_matches.html", context)
    if not context["live"] and request.headers.get("HX-Request"):
        response["HX-Refresh"] = "true"
    return response


def replay_data(match: Match, viewer: Any = None) -> dict:
    """The replay JSON shared by the match page and ``/api/matches/<id>/replay/``.

    ``error_msg`` is the platform's sentence about an error (everyone); ``error_detail`` the referee's
    text (the agent's exception, traceback, stderr) when ``viewer`` owns the agent that erred or is staff,
    else ``None`` (``web.error_privacy``).

    ``states[0]`` is the position before the first move and ``states[i]`` the one after ``actions[i-1]``
    (the referee stores only the states after each action; the initial one is added here). ``moves[i]``
    says who played ``actions[i]`` and what it means in the game's words.
    """
    d = match.duel
    names = [d.revision_1.competitor.name, d.revision_2.competitor.name]
    # Seat 0 moves first: map seats to the players' names.
    seats = names if match.first_player == Match.FirstPlayer.PLAYER_1 else names[::-1]
    states, moves = replay_states(d.environment.slug, match.states or [], match.actions or [], seats)
    return {
        "match": match.pk,
        "duel": d.pk,
        "index": match.index,
        "environment": d.environment.slug,
        "players": names,
        "seats": seats,
        "first_player": match.first_player,
        "result": match.result,
        "result_text": match_result_text(match, names),
        "error_kind": match.error_kind,
        "error_msg": match_sentence(match.result, match.error_kind, names, len(match.actions or [])),
        "error_detail": match_detail(
            match.result,
            match.error_msg,
            viewer,
            (d.revision_1.competitor.owner_id, d.revision_2.competitor.owner_id),
            (names[0], names[1]),
        ),
        "player_1_score": match.player_1_score,
        "player_2_score": match.player_2_score,
        "states": states,
        "actions": match.actions,
        "moves": moves,
        "move_times": match.move_times,
    }


def match_queryset():
    """Matches with their duel, game and both players joined in."""
    return Match.objects.select_related(
        "duel__environment", "duel__revision_1__competitor__owner", "duel__revision_2__competitor__owner"
    ).defer("duel__player_1_log", "duel__player_2_log")


@require_GET
def match(request: HttpRequest, pk: int) -> HttpResponse:
    """One match replayed with the game's own renderer."""
    m = get_object_or_404(match_queryset(), pk=pk)
    siblings = list(m.duel.matches.order_by("index").values_list("pk", "index"))
    pos = next((i for i, (spk, _) in enumerate(siblings) if spk == m.pk), 0)
    context = {
        "match": m,
        "duel": m.duel,
        "environment": m.duel.environment,
        "replay": replay_data(m, request.user),
        "renderer_path": f"games/{m.duel.environment.slug}/renderer.js",
        "previous_match": siblings[pos - 1][0] if pos > 0 else None,
        "next_match": siblings[pos + 1][0] if pos + 1 < len(siblings) else None,
    }
    return render(request, "web/match.html", context)
