"""Celery tasks of the tournament manager, registered under explicit names.

- ``tournament_manager.rate_environment(environment_id)``: sent by ``core`` after each recorded duel;
  triggers arriving while a run is in progress are folded into it (:mod:`core.rating_outbox`).
- ``tournament_manager.matchmake()``: periodic; tops up every active environment's ladder.
- ``tournament_manager.check_editions()``: periodic; starts a new edition when the eligible set changed,
  and refreshes the standings of running editions.
- ``tournament_manager.refresh_tie_fit(environment_id)``: the leaderboard's Bradley-Terry tie fit,
  requested (debounced) after ratings change; see :mod:`tournament_manager.tie_fit`.
- ``tournament_manager.refresh_tie_fits()``: periodic safety net; refits any environment whose stored
  fit is older than its latest rating (a lost hint, a flushed cache).

Tasks take ids, are idempotent (the actions lock and re-check), and leave the truth in the database.
"""

from __future__ import annotations

import logging

from django.conf import settings

from core import rating_outbox
from core.celery import app
from core.queue import send_task
from tournament_manager import actions, tie_fit

log = logging.getLogger(__name__)

#: Default periodic entries, merged into the beat schedule unless settings already define them.
BEAT_SCHEDULE = {
    "tournament-manager-matchmake": {
        "task": "tournament_manager.matchmake",
        "schedule": float(getattr(settings, "TM_MATCHMAKE_INTERVAL_SECONDS", 10.0)),
    },
    "tournament-manager-check-editions": {
        "task": "tournament_manager.check_editions",
        "schedule": float(getattr(settings, "TM_CHECK_EDITIONS_INTERVAL_SECONDS", 300.0)),
    },
    "tournament-manager-refresh-tie-fits": {
        "task": "tournament_manager.refresh_tie_fits",
        "schedule": float(getattr(settings, "TM_TIE_FIT_CHECK_INTERVAL_SECONDS", 600.0)),
    },
}
for _name, _entry in BEAT_SCHEDULE.items():
    app.conf.beat_schedule.setdefault(_name, _entry)


RATE_TASK_NAME = "tournament_manager.rate_environment"


@app.task(name=RATE_TASK_NAME)
def rate_environment(environment_id: int, run_token: str | None = None) -> int:
    """Apply the environment's finished, unrated duels to its ratings, then request a (debounced) refit of
    the leaderboard's tie groups; returns how many duels were rated (0 when the run in progress takes
    them). ``run_token`` marks the continuation of a rating run (:mod:`core.rating_outbox`)."""

    def schedule(token: str | None, countdown: float) -> None:
        args = (environment_id, token) if token is not None else (environment_id,)
        send_task(RATE_TASK_NAME, *args, countdown=countdown or None)

    rated = rating_outbox.run(
        environment_id,
        lambda limit: actions.rate_pending_duels(environment_id, limit=limit),
        schedule,
        run_token,
    )
    if rated:
        tie_fit.request_refresh(environment_id)
        # Duels finished: plan the next ones now, from the ratings they just moved (not only on the timer).
        actions.matchmake(environment_id)
    return rated


@app.task(name=tie_fit.TASK_NAME)
def refresh_tie_fit(environment_id: int) -> int:
    """Recompute and store the environment's Bradley-Terry tie fit; returns the results it covers."""
    return tie_fit.refresh(environment_id).n_results


@app.task(name="tournament_manager.refresh_tie_fits")
def refresh_tie_fits() -> int:
    """Refit every active environment whose stored fit misses its latest ratings; returns how many."""
    refreshed = 0
    for environment_id in actions.active_environments():
        if tie_fit.is_stale(environment_id):
            tie_fit.refresh(environment_id)
            refreshed += 1
    return refreshed


@app.task(name="tournament_manager.matchmake")
def matchmake() -> int:
    """Schedule ladder duels in every active environment; returns how many were created."""
    created = 0
    for environment_id in actions.active_environments():
        created += len(actions.matchmake(environment_id))
    if created:
        log.info("matchmaking scheduled %d ladder duel(s)", created)
    return created


@app.task(name="tournament_manager.check_editions")
def check_editions() -> int:
    """Refresh running editions, then start new ones where the eligible set changed; returns new editions."""
    for tournament_id in actions.running_tournaments():
        actions.update_tournament_progress(tournament_id)
    started = 0
    for environment_id in actions.active_environments():
        started += actions.check_editions(environment_id) is not None
    return started
