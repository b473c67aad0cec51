"""Pausing and resuming competitors (a paused competitor is left out of matchmaking).

Operators pause and resume by hand (admin, ``set_competitor_status``). The platform also pauses a
competitor on its own when its playing revision keeps breaking the rules (``pause_if_erring``: errors in at
least half the matches of each of its last ``PAUSE_AFTER_ERROR_DUELS`` rated duels), and resumes it when
a newer revision passes its smoke test (``resume_after_new_revision``). Owners are notified of each pause.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from core.actions.errors import ActionError
from core.actions.notifications import notify_competitor_paused
from core.models import Competitor, Duel, Match

#: Reasons of automatic pauses start with this, so a new revision lifts them but never an operator's pause.
AUTO_PAUSE_PREFIX = "Paused automatically: "
_RATED_KINDS = (Duel.Kind.LADDER, Duel.Kind.TOURNAMENT)


def set_competitor_status(competitor_id: int, status: str, reason: str = "") -> Competitor:
    """Set ``Competitor.status`` (ACTIVE or PAUSED) with a reason shown to its owner. Pausing an active
    competitor notifies its owner (once per pause, in the same transaction)."""
    if status not in Competitor.Status.values:
        raise ActionError(f"unknown status {status!r}; use one of {', '.join(Competitor.Status.values)}")
    with transaction.atomic():
        competitor = Competitor.objects.select_for_update().get(pk=competitor_id)
        newly_paused = status == Competitor.Status.PAUSED and competitor.status != status
        competitor.status = status
        competitor.pause_reason = reason if status == Competitor.Status.PAUSED else ""
        competitor.save(update_fields=["status", "pause_reason"])
        if newly_paused:
            notify_competitor_paused(competitor)
    return competitor


def _erring_duels(revision_id: int, window: int) -> list[tuple[Duel, int]]:
    """The revision's last ``window`` finished rated duels with the errors charged to it in each."""
    finished = Duel.objects.filter(state=Duel.State.FINISHED, kind__in=_RATED_KINDS).only(
        "pk", "revision_1_id", "revision_2_id", "num_matches", "player_1_errors", "player_2_errors"
    )
    recent = sorted(
        [
            *finished.filter(revision_1_id=revision_id).order_by("-finished_at", "-pk")[:window],
            *finished.filter(revision_2_id=revision_id).order_by("-finished_at", "-pk")[:window],
        ],
        key=lambda d: (d.finished_at, d.pk),
        reverse=True,
    )[:window]
    return [(d, d.player_1_errors if d.revision_1_id == revision_id else d.player_2_errors) for d in recent]


def _last_error_message(duel: Duel, revision_id: int) -> str:
    seat_error = (
        Match.Result.PLAYER_1_ERROR if duel.revision_1_id == revision_id else Match.Result.PLAYER_2_ERROR
    )
    match = Match.objects.filter(duel=duel, result=seat_error).order_by("-index").only("error_msg").first()
    return (match.error_msg if match else "")[:300]


def pause_if_erring(revision_id: int) -> bool:
    """Pause the competitor whose playing revision ``revision_id`` broke the rules (timeout, crash,
    illegal action, ...) in at least half the matches of each of its last ``PAUSE_AFTER_ERROR_DUELS``
    rated duels. Returns True when it paused it now. Call inside the transaction that stored the result.
    """
    window = int(getattr(settings, "PAUSE_AFTER_ERROR_DUELS", 3))
    if window <= 0:
        return False
    competitor = (
        Competitor.objects.select_for_update()
        .filter(current_revision_id=revision_id, status=Competitor.Status.ACTIVE)
        .select_related("current_revision")
        .first()
    )
    if competitor is None or competitor.current_revision is None:
        return False
    duels = _erring_duels(revision_id, window)
    if len(duels) < window or any(errors == 0 or 2 * errors < (d.num_matches or 1) for d, errors in duels):
        return False
    latest = _last_error_message(duels[0][0], revision_id)
    version = competitor.current_revision.version
    reason = (
        f"{AUTO_PAUSE_PREFIX}revision {version} broke the rules in at least half the matches of each of "
        f"its last {window} duels (latest error: {latest or 'see the duel logs'}). "
        "Upload a fixed revision: it resumes play once it passes its smoke test."
    )
    set_competitor_status(competitor.pk, Competitor.Status.PAUSED, reason)
    return True


def pause_erring_players(duel: Duel) -> None:
    """After a rated duel is stored: ``pause_if_erring`` for each seat charged with an error in it."""
    if duel.kind not in _RATED_KINDS:
        return
    for errors, revision_id in (
        (duel.player_1_errors, duel.revision_1_id),
        (duel.player_2_errors, duel.revision_2_id),
    ):
        if errors:
            pause_if_erring(revision_id)


def resume_after_new_revision(competitor: Competitor) -> bool:
    """Lift an automatic pause now that ``competitor`` (locked by the caller) has a new playing revision.
    An operator's pause stays. Returns True when it resumed."""
    if competitor.status != Competitor.Status.PAUSED or not competitor.pause_reason.startswith(
        AUTO_PAUSE_PREFIX
    ):
        return False
    set_competitor_status(competitor.pk, Competitor.Status.ACTIVE)
    return True
