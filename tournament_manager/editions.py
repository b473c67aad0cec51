"""Tournament editions: a round-robin schedule over a fixed set of revisions, and its standings.

An edition pairs every two participants exactly once (one duel each; colour balance is the duel's job,
since it alternates who starts). A duel won is worth 2 points, a draw 1, a loss or an error 0. Standings
rank by points, then duel wins, then total score; competitors equal on all three share a rank and the
next rank skips (1, 2, 2, 4).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tournament_manager.ids import Id

WIN_POINTS = 2
DRAW_POINTS = 1


def round_robin_rounds(participants: Sequence[Id]) -> list[list[tuple[Id, Id]]]:
    """Rounds of disjoint pairs covering every pair once (the circle method; a bye when the count is odd).

    Within a pair, the participant listed first alternates between rounds so nobody is always first.
    """
    ids = list(participants)
    if len(set(ids)) != len(ids):
        raise ValueError("participants must be distinct")
    if len(ids) < 2:
        return []
    bye = object()
    if len(ids) % 2:
        ids.append(bye)
    n = len(ids)
    fixed, rotating = ids[0], ids[1:]
    rounds: list[list[tuple[Id, Id]]] = []
    for r in range(n - 1):
        line = [fixed, *rotating]
        rnd = []
        for i in range(n // 2):
            a, b = line[i], line[n - 1 - i]
            if a is bye or b is bye:
                continue
            rnd.append((a, b) if (r + i) % 2 == 0 else (b, a))
        rounds.append(rnd)
        rotating = rotating[-1:] + rotating[:-1]
    return rounds


def round_robin_pairs(participants: Sequence[Id]) -> list[tuple[Id, Id]]:
    """Every unordered pair of ``participants`` exactly once, in round order."""
    return [pair for rnd in round_robin_rounds(participants) for pair in rnd]


@dataclass(frozen=True)
class DuelOutcome:
    """One finished duel of an edition: ``outcome`` 1.0 ``a`` won, 0.5 draw, 0.0 ``b`` won, ``None`` error."""

    a: Id
    b: Id
    outcome: float | None
    score_a: float = 0.0
    score_b: float = 0.0


@dataclass
class Standing:
    """One line of an edition's table."""

    id: Id
    rank: int = 0
    points: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    errors: int = 0
    score: float = 0.0
    played: int = 0
    opponents: list[Id] = field(default_factory=list, repr=False)


def standings(participants: Iterable[Id], duels: Iterable[DuelOutcome]) -> list[Standing]:
    """The table of an edition: ranked by points, then wins, then total score; equal lines share a rank.

    A duel that ended in error (``outcome`` None) counts as played with no points for either side. Lines
    with the same rank are listed by id, so the output is deterministic.
    """
    table = {p: Standing(p) for p in participants}
    for d in duels:
        if d.a not in table or d.b not in table:
            raise ValueError(f"duel between {d.a!r} and {d.b!r} involves a non-participant")
        sa, sb = table[d.a], table[d.b]
        for s, own in ((sa, d.score_a), (sb, d.score_b)):
            s.played += 1
            s.score += own
        sa.opponents.append(d.b)
        sb.opponents.append(d.a)
        if d.outcome is None:
            sa.errors += 1
            sb.errors += 1
        elif d.outcome == 0.5:
            for s in (sa, sb):
                s.draws += 1
                s.points += DRAW_POINTS
        elif d.outcome in (1.0, 0.0):
            winner, loser = (sa, sb) if d.outcome == 1.0 else (sb, sa)
            winner.wins += 1
            winner.points += WIN_POINTS
            loser.losses += 1
        else:
            raise ValueError(f"outcome must be 1.0, 0.5, 0.0 or None, got {d.outcome!r}")

    def key(s: Standing) -> tuple[int, int, float]:
        return (s.points, s.wins, round(s.score, 9))

    lines = sorted(table.values(), key=lambda s: str(s.id))
    lines.sort(key=key, reverse=True)
    for i, s in enumerate(lines):
        s.rank = lines[i - 1].rank if i and key(lines[i - 1]) == key(s) else i + 1
    return lines
