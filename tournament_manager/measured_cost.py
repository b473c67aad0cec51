"""What a duel really costs the workers of one game, fitted from its recent duels.

Matchmaking prices a duel as ``fixed_s + per_match_s x matches`` worker-seconds (:class:`DuelCost`) and
chooses each duel's length by the doubt it removes per worker-second. Settings give that model
(``TM_DUEL_FIXED_SECONDS``, ``TM_DUEL_MATCH_SECONDS``), but what a duel costs depends on the fleet (warm or
fresh sandboxes, how loaded the workers are) and on the agents (a thinking agent makes each match dear).
A model that is wrong in one direction makes the ladder play duels that are too short, so the fleet spends
its time starting and stopping sandboxes instead of playing.

So with ``TM_DUEL_COST_FROM_DUELS`` on (the default) a game's model is fitted from the slot time of its
last :data:`RECENT` finished duels: each duel held a worker slot from its claim (``started_at``) to its
record (``finished_at``, both database time) and played ``wins + draws`` matches (a duel that stopped
early counts what it played). The fit is a least-squares line through the median slot time of each duel
length, weighted by how many duels had that length (medians: one duel stalled behind a slow engine does
not move it). With a single length seen, the settings' per-match cost is kept and the fixed cost is what
remains of the median; with fewer than :data:`MIN_DUELS` duels the settings' model is used as it is.
Each matchmaking round reads its game's last duels afresh (one query on ``core_duel_env_recent``, about a
millisecond), so the model follows the fleet as it changes.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from django.conf import settings
from django.db.models import DurationField, ExpressionWrapper, F

from core.models import Duel
from tournament_manager.duel_plan import DuelCost

#: Duels the fit reads: the game's latest finished ones (index ``core_duel_env_recent``).
RECENT = 200
#: Fewer usable duels than this: the settings' model.
MIN_DUELS = 20
#: A length counts in the fit once this many duels had it.
MIN_PER_LENGTH = 3
#: Floors of the fitted model: a start is never free of cost, nor a match.
MIN_FIXED_S = 0.001
MIN_PER_MATCH_S = 0.0005


def fit_duel_cost(samples: list[tuple[int, float]], fallback: DuelCost) -> DuelCost:
    """The model fitted to ``samples`` of (matches played, slot seconds); ``fallback`` when too few."""
    by_length: dict[int, list[float]] = defaultdict(list)
    for matches, seconds in samples:
        if matches > 0 and seconds >= 0:
            by_length[matches].append(seconds)
    if sum(len(v) for v in by_length.values()) < MIN_DUELS:
        return fallback
    points = [(n, statistics.median(v), len(v)) for n, v in by_length.items() if len(v) >= MIN_PER_LENGTH]
    if not points:
        return fallback
    weight = sum(w for _, _, w in points)
    mean_n = sum(n * w for n, _, w in points) / weight
    mean_s = sum(s * w for _, s, w in points) / weight
    spread = sum(w * (n - mean_n) ** 2 for n, _, w in points)
    per_match = fallback.per_match_s
    if spread > 0:
        per_match = sum(w * (n - mean_n) * (s - mean_s) for n, s, w in points) / spread
    per_match = max(MIN_PER_MATCH_S, per_match)
    fixed = max(MIN_FIXED_S, mean_s - per_match * mean_n)
    return DuelCost(fixed_s=fixed, per_match_s=per_match)


def recent_samples(environment_id: int) -> list[tuple[int, float]]:
    """(matches played, slot seconds) of the game's last :data:`RECENT` finished duels."""
    played = F("player_1_wins") + F("player_2_wins") + F("draws")
    rows = (
        Duel.objects.filter(
            environment_id=environment_id, state=Duel.State.FINISHED, started_at__isnull=False
        )
        .order_by("-finished_at")
        .annotate(
            played=played,
            held=ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField()),
        )
        .values_list("played", "held")[:RECENT]
    )
    return [(int(n), held.total_seconds()) for n, held in rows if held is not None]


def measured_duel_cost(environment_id: int, fallback: DuelCost) -> DuelCost:
    """The game's model fitted to its recent duels, or ``fallback`` (the settings' model) when
    ``TM_DUEL_COST_FROM_DUELS`` is off or the game has too few duels to fit."""
    if not getattr(settings, "TM_DUEL_COST_FROM_DUELS", True):
        return fallback
    return fit_duel_cost(recent_samples(environment_id), fallback)
