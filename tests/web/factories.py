"""Factories for web tests: rows as the pipeline would leave them, with real game states for replays.

They write through the ORM because they stand in for the builder, duel runner and rating code, whose own
tests cover those writes; web code under test still changes state only through actions.
"""

from __future__ import annotations

import itertools
import random
from datetime import timedelta
from typing import Any

from django.utils import timezone

import environments
from core.actions import sync_environments
from core.actions.pair_records import count_duel_result
from core.management.commands.sync_environments import game_infos
from core.models import (
    Build,
    Competitor,
    Duel,
    Environment,
    Match,
    Rating,
    RatingHistory,
    Revision,
    SmokeTest,
    Tournament,
    TournamentParticipant,
    User,
)

_seq = itertools.count(1)
PASSWORD = "a-Long-pass-phrase-42"


def environment(slug: str = "connect-four") -> Environment:
    """The synced environment row for ``slug``."""
    if not Environment.objects.filter(slug=slug).exists():
        sync_environments(game_infos())
    return Environment.objects.get(slug=slug)


def user(email: str | None = None, **extra: Any) -> User:
    """A user with password ``PASSWORD``."""
    n = next(_seq)
    extra.setdefault("display_name", f"Player {n}")
    return User.objects.create_user(email=email or f"user{n}@example.com", password=PASSWORD, **extra)


def competitor(
    owner: User | None = None,
    env: Environment | None = None,
    name: str | None = None,
    state: str = Revision.State.ELIGIBLE,
    is_public: bool = False,
    with_logs: bool = True,
) -> Competitor:
    """A competitor with one revision in ``state`` (eligible ones are current and rated)."""
    env = env or environment()
    comp = Competitor.objects.create(
        owner=owner or user(),
        environment=env,
        name=name or f"bot-{next(_seq)}",
        is_public=is_public,
        next_version=2,
    )
    revision(comp, state=state, with_logs=with_logs)
    return comp


def revision(comp: Competitor, state: str = Revision.State.ELIGIBLE, with_logs: bool = True) -> Revision:
    """A revision of ``comp`` with the build and smoke test its state implies."""
    version = (comp.revisions.count() or 0) + 1
    rev = Revision.objects.create(
        competitor=comp,
        version=version,
        state=state,
        zip_path=f"submissions/{comp.pk}/{version}-x.zip",
        zip_size=1234,
        content_hash="0" * 64,
        is_public=comp.is_public,
        error_message={
            Revision.State.BUILD_FAILED: "pip could not install 'nosuchpackage' from requirements.txt",
            Revision.State.TEST_FAILED: "INVALID_ACTION: player returned 9, legal actions are [0..6]",
        }.get(state, ""),
    )
    now = timezone.now()
    if state != Revision.State.UPLOADED:
        build_failed = state == Revision.State.BUILD_FAILED
        Build.objects.create(
            revision=rev,
            state=Build.State.FAILED if build_failed else Build.State.SUCCEEDED,
            log=(
                "Step 1/3: copying files\nStep 2/3: pip install -r requirements.txt\n"
                "ERROR: No matching distribution found for nosuchpackage\n"
                if build_failed
                else "Step 1/3: copying files\nStep 2/3: no requirements\nStep 3/3: done\n"
            )
            if with_logs
            else "",
            error="pip install failed" if build_failed else "",
            finished_at=now,
        )
    if state in (Revision.State.TEST_FAILED, Revision.State.ELIGIBLE, Revision.State.TESTING):
        failed = state == Revision.State.TEST_FAILED
        SmokeTest.objects.create(
            revision=rev,
            # A smoke test that found a rule broken ran to the end: SUCCEEDED, passed false (FAILED is for
            # a test that could not run, on our side), as core.actions.finish_smoke_test records it.
            state=SmokeTest.State.RUNNING if state == Revision.State.TESTING else SmokeTest.State.SUCCEEDED,
            passed=None if state == Revision.State.TESTING else not failed,
            reason="INVALID_ACTION: player returned 9" if failed else "",
            log="Traceback (most recent call last):\n  File player.py, line 3\nValueError: bad move\n"
            if failed and with_logs
            else "",
        )
    if state == Revision.State.ELIGIBLE:
        Competitor.objects.filter(pk=comp.pk).update(current_revision=rev)
        comp.current_revision = rev
        Rating.objects.get_or_create(environment=comp.environment, competitor=comp)
    return rev


def play_random_match(slug: str, seed: int) -> tuple[list[dict], list[int], int | None]:
    """A real match of random moves: (states, actions, winner seat)."""
    game = environments.get_game(slug)
    rng = random.Random(seed)
    state = game.initial_state()
    states, actions = [state], []
    while not game.is_over(state):
        action = rng.choice(game.legal_actions(state))
        state = game.apply(state, action)
        states.append(state)
        actions.append(action)
    return states, actions, game.winner(state)


def duel(
    c1: Competitor,
    c2: Competitor,
    num_matches: int = 4,
    finished_ago_s: int = 60,
    *,
    initial_state: bool = True,
) -> Duel:
    """A finished duel between the current revisions of two competitors, with real match replays.

    ``initial_state=False`` stores what the referee stores: only the state after each action (older rows
    and these factories' default also keep the initial position first)."""
    slug = c1.environment.slug
    d = Duel.objects.create(
        environment=c1.environment,
        revision_1=c1.current_revision,
        revision_2=c2.current_revision,
        state=Duel.State.FINISHED,
        finished_at=timezone.now() - timedelta(seconds=finished_ago_s),
        player_1_log="player 1 says hello\n",
        player_2_log="player 2 secret log\n",
    )
    w1 = w2 = dr = 0
    for i in range(num_matches):
        states, acts, winner = play_random_match(slug, seed=d.pk * 100 + i)
        first = Match.FirstPlayer.PLAYER_1 if i % 2 == 0 else Match.FirstPlayer.PLAYER_2
        if winner is None:
            result, s1, s2 = Match.Result.DRAW, 0.5, 0.5
            dr += 1
        else:
            p1_won = (winner == 0) == (first == Match.FirstPlayer.PLAYER_1)
            result = Match.Result.PLAYER_1_WIN if p1_won else Match.Result.PLAYER_2_WIN
            s1, s2 = (1.0, 0.0) if p1_won else (0.0, 1.0)
            w1 += p1_won
            w2 += not p1_won
        Match.objects.create(
            duel=d,
            index=i,
            result=result,
            first_player=first,
            player_1_score=s1,
            player_2_score=s2,
            states=states if initial_state else states[1:],
            actions=acts,
            move_times=[0.001 * (k + 1) for k in range(len(acts))],
        )
    d.player_1_wins, d.player_2_wins, d.draws = w1, w2, dr
    d.player_1_score, d.player_2_score = w1 + dr / 2, w2 + dr / 2
    d.result = (
        Duel.Result.PLAYER_1_WIN if w1 > w2 else Duel.Result.PLAYER_2_WIN if w2 > w1 else Duel.Result.DRAW
    )
    d.save()
    count_duel_result(d)  # what record_duel_result adds: the pair's head-to-head counts
    return d


def rate(comp: Competitor, mu: float, sigma: float, history: int = 5) -> Rating:
    """Set a competitor's rating, with a history converging to it."""
    rating, _ = Rating.objects.get_or_create(environment=comp.environment, competitor=comp)
    rating.set_skill(mu, sigma)
    rating.matches, rating.wins, rating.draws, rating.losses = 20, 10, 4, 6
    rating.last_played_at = timezone.now()
    rating.save()
    start = timezone.now() - timedelta(hours=history)
    for i in range(history):
        frac = (i + 1) / history
        h = RatingHistory.objects.create(
            rating=rating, mu=25 + (mu - 25) * frac, sigma=8.33 + (sigma - 8.33) * frac
        )
        RatingHistory.objects.filter(pk=h.pk).update(created_at=start + timedelta(hours=i))
    return rating


def tournament(env: Environment, comps: list[Competitor]) -> Tournament:
    """A finished tournament edition with standings."""
    t = Tournament.objects.create(
        environment=env,
        edition=(Tournament.objects.filter(environment=env).count() + 1),
        state=Tournament.State.FINISHED,
        duels_total=len(comps) * (len(comps) - 1) // 2,
        duels_finished=len(comps) * (len(comps) - 1) // 2,
    )
    for rank, c in enumerate(comps, start=1):
        TournamentParticipant.objects.create(
            tournament=t,
            revision=c.current_revision,
            points=2 * (len(comps) - rank),
            wins=len(comps) - rank,
            rank=rank,
        )
    return t


def error_duel(
    c1: Competitor, c2: Competitor, *, erring: int = 2, kind: str = "CRASH", num_matches: int = 4
) -> Duel:
    """A finished duel that player ``erring`` (1 or 2) lost by erring in every match, as the referee
    records it: no board wins, the other player scores each match."""
    d = Duel.objects.create(
        environment=c1.environment,
        revision_1=c1.current_revision,
        revision_2=c2.current_revision,
        state=Duel.State.FINISHED,
        finished_at=timezone.now(),
        num_matches=num_matches,
    )
    slug = c1.environment.slug
    game = environments.get_game(slug)
    for i in range(num_matches):
        first = Match.FirstPlayer.PLAYER_1 if i % 2 == 0 else Match.FirstPlayer.PLAYER_2
        # The erring player fails on its first move: the first mover plays once if it is the one.
        erring_first = (erring == 1) == (first == Match.FirstPlayer.PLAYER_1)
        actions = [] if erring_first else [game.legal_actions(game.initial_state())[0]]
        states = [game.apply(game.initial_state(), a) for a in actions]
        Match.objects.create(
            duel=d,
            index=i,
            result=Match.Result.PLAYER_1_ERROR if erring == 1 else Match.Result.PLAYER_2_ERROR,
            error_kind=kind,
            error_msg=(
                f"PLAYER_{erring} raised RuntimeError at move {len(actions) + 1}:\n"
                "Traceback (most recent call last):\n"
                '  File "/agent/player.py", line 12, in step\n'
                "    raise RuntimeError('boom')\n"
                "RuntimeError: boom"
            ),
            first_player=first,
            player_1_score=0.0 if erring == 1 else 1.0,
            player_2_score=1.0 if erring == 1 else 0.0,
            states=states,
            actions=actions,
            move_times=[0.001] * len(actions),
        )
    d.result = Duel.Result.PLAYER_2_WIN if erring == 1 else Duel.Result.PLAYER_1_WIN
    d.player_1_errors = num_matches if erring == 1 else 0
    d.player_2_errors = num_matches if erring == 2 else 0
    d.player_1_score = 0.0 if erring == 1 else float(num_matches)
    d.player_2_score = float(num_matches) if erring == 1 else 0.0
    d.save()
    count_duel_result(d)  # what record_duel_result adds: the pair's head-to-head counts
    return d


def rate_duel(d: Duel, after: dict[Competitor, tuple[float, float]]) -> None:
    """Record what rating ``d`` gave each competitor (mu, sigma after it), as ``tournament_manager`` does:
    one history entry per rating and duel, stamped after every earlier entry, and the duel marked rated."""
    stamp = timezone.now()
    for comp in after:
        rating, _ = Rating.objects.get_or_create(environment=comp.environment, competitor=comp)
        latest = RatingHistory.objects.filter(rating=rating).order_by("-created_at").first()
        if latest is not None and latest.created_at >= stamp:
            stamp = latest.created_at + timedelta(seconds=1)
    for i, (comp, (mu, sigma)) in enumerate(after.items()):
        rating = Rating.objects.get(environment=comp.environment, competitor=comp)
        h = RatingHistory.objects.create(rating=rating, duel=d, mu=mu, sigma=sigma)
        # bulk_create stamps each entry as it builds it: a duel's two entries are microseconds apart.
        moment = stamp + timedelta(microseconds=i)
        RatingHistory.objects.filter(pk=h.pk).update(created_at=moment)
        rating.set_skill(mu, sigma)
        rating.save()
    Duel.objects.filter(pk=d.pk).update(rated=True, rated_at=stamp)
    d.rated = True


def running_duel(c1: Competitor, c2: Competitor, num_matches: int = 6) -> Duel:
    """A RUNNING duel with no match recorded yet (``record_match`` adds them as a runner would)."""
    return Duel.objects.create(
        environment=c1.environment,
        revision_1=c1.current_revision,
        revision_2=c2.current_revision,
        state=Duel.State.RUNNING,
        num_matches=num_matches,
    )


def record_match(d: Duel, index: int) -> Match:
    """Store match ``index`` of a running duel with a real random replay, as the referee records it."""
    states, acts, winner = play_random_match(d.environment.slug, seed=d.pk * 100 + index)
    first = Match.FirstPlayer.PLAYER_1 if index % 2 == 0 else Match.FirstPlayer.PLAYER_2
    if winner is None:
        result, s1, s2 = Match.Result.DRAW, 0.5, 0.5
    else:
        p1_won = (winner == 0) == (first == Match.FirstPlayer.PLAYER_1)
        result = Match.Result.PLAYER_1_WIN if p1_won else Match.Result.PLAYER_2_WIN
        s1, s2 = (1.0, 0.0) if p1_won else (0.0, 1.0)
    return Match.objects.create(
        duel=d,
        index=index,
        result=result,
        first_player=first,
        player_1_score=s1,
        player_2_score=s2,
        states=states[1:],
        actions=acts,
        move_times=[0.002] * len(acts),
    )
