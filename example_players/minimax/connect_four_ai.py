"""Connect Four: bitboard negamax with alpha-beta, iterative deepening and a transposition table.

Observation: (6, 7) array, row 0 = top, 1 = my pieces, -1 = opponent pieces, 0 = empty. Actions 0..6 =
column. Board encoding (classic 7x7 bitboard): column c uses bits 7c .. 7c+5, bottom row first; bit 7c+6
stays empty as a sentinel so shifted patterns never wrap between columns.

Each node first looks for an immediate win, then for the opponent's immediate threats (one threat must
be blocked, two lose), and never plays directly below a cell that completes an opponent four. Leaves are
scored by threat counting (cells that would complete four, with a bonus for threats on the rows where
they are hardest to defuse) and centre control. Moves are ordered by the transposition-table move, then
by how many threats they create, then centre first. The search deepens one ply at a time until the time
budget or node limit runs out, and answers with the best move of the deepest completed iteration.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

WIDTH, HEIGHT = 7, 6
H1 = HEIGHT + 1
BOTTOM = sum(1 << (c * H1) for c in range(WIDTH))
BOARD = BOTTOM * ((1 << HEIGHT) - 1)
COLUMN = tuple(((1 << HEIGHT) - 1) << (c * H1) for c in range(WIDTH))
CENTRE_ORDER = (3, 2, 4, 1, 5, 0, 6)
# Rows 1, 3, 5 counted from the bottom (bit rows 0, 2, 4) favour the first player's threats.
ODD_ROWS = BOTTOM * 0b010101
EVEN_ROWS = BOTTOM * 0b101010
CENTRE_WEIGHTS = ((COLUMN[3], 4), (COLUMN[2] | COLUMN[4], 2), (COLUMN[1] | COLUMN[5], 1))
TIME_CHECK_INTERVAL = 256  # nodes between two clock reads (about 5 ms)
WIN = 1_000_000  # a win at ply p (moves played on the board) scores WIN - p
EXACT, LOWER, UPPER = 0, 1, 2


def _popcount(x: int) -> int:
    return bin(x).count("1")


def winning_cells(pos: int, mask: int) -> int:
    """Empty cells that would complete four in a row for the pieces ``pos`` (board occupancy ``mask``)."""
    r = (pos << 1) & (pos << 2) & (pos << 3)  # vertical: only upwards
    for s in (H1, H1 - 1, H1 + 1):  # horizontal, both diagonals
        p = (pos << s) & (pos << 2 * s)
        r |= p & (pos << 3 * s)
        r |= p & (pos >> s)
        p = (pos >> s) & (pos >> 2 * s)
        r |= p & (pos << s)
        r |= p & (pos >> 3 * s)
    return r & (BOARD ^ mask)


def from_observation(observation) -> tuple[int, int]:
    """Return ``(mine, mask)`` bitboards from a (6, 7) observation (row 0 = top)."""
    rows = observation.tolist()
    mine = mask = 0
    for r in range(HEIGHT):
        for c in range(WIDTH):
            v = int(rows[r][c])
            if v:
                bit = 1 << (c * H1 + (HEIGHT - 1 - r))
                mask |= bit
                if v > 0:
                    mine |= bit
    return mine, mask


@dataclass
class SearchStats:
    """What the last ``choose`` call did."""

    nodes: int = 0
    depth: int = 0  # deepest fully completed iteration (0: answered without searching)
    value: int = 0  # score of the chosen move for me
    stopped_early: bool = False  # the time budget or node limit cut an iteration short
    elapsed: float = 0.0


class _OutOfBudget(Exception):
    """Raised inside the search when the time budget or node limit is exhausted."""


class ConnectFourAI:
    """Alpha-beta Connect Four player with a per-move time budget (seconds) and optional node limit."""

    def __init__(self, time_budget: float = 0.2, node_limit: int | None = None, max_depth: int = 42) -> None:
        self.time_budget = time_budget
        self.node_limit = node_limit
        self.max_depth = max_depth
        self.last_stats = SearchStats()
        self._tt: dict[int, tuple[int, int, int, int]] = {}
        self._deadline = 0.0
        self._nodes = 0

    def choose(self, observation, valid_actions: list[int]) -> int:
        """Return the column to play for the player marked 1 in ``observation``."""
        started = time.perf_counter()
        self._deadline = started + self.time_budget
        self._nodes = 0
        self.last_stats = stats = SearchStats()
        try:
            return self._choose(*from_observation(observation), valid_actions, stats)
        finally:
            stats.nodes = self._nodes
            stats.elapsed = time.perf_counter() - started

    def _choose(self, mine: int, mask: int, valid_actions: list[int], stats: SearchStats) -> int:
        valid = [c for c in valid_actions if 0 <= c < WIDTH and not mask & (1 << (c * H1 + HEIGHT - 1))]
        if not valid:
            return valid_actions[0]
        possible = (mask + BOTTOM) & BOARD
        wins = winning_cells(mine, mask) & possible
        for c in valid:
            if wins & COLUMN[c]:
                stats.value = WIN
                return c
        threats = winning_cells(mine ^ mask, mask) & possible
        for c in CENTRE_ORDER:
            if c in valid and threats & COLUMN[c]:
                return c  # block (if there are two, the game is lost anyway)
        if len(self._tt) > 200_000:  # about 30 MB
            self._tt.clear()
        ply = _popcount(mask)
        best_move = self._order(mine, mask, [c for c in CENTRE_ORDER if c in valid], None)[0]
        for depth in range(1, min(self.max_depth, WIDTH * HEIGHT - ply) + 1):
            try:
                value, move = self._root(mine, mask, ply, depth, valid, best_move)
            except _OutOfBudget:
                stats.stopped_early = True
                break
            best_move, stats.value, stats.depth = move, value, depth
            if abs(value) >= WIN - WIDTH * HEIGHT:
                break  # proven win or loss: deeper search changes nothing
        return best_move

    def _root(
        self, mine: int, mask: int, ply: int, depth: int, valid: list[int], first: int
    ) -> tuple[int, int]:
        moves = self._order(mine, mask, [c for c in CENTRE_ORDER if c in valid], first)
        alpha, beta = -WIN - 1, WIN + 1
        best_value, best_move = -WIN - 1, moves[0]
        for c in moves:
            bit = (mask + (1 << (c * H1))) & COLUMN[c]
            value = -self._negamax(mine ^ mask, mask | bit, ply + 1, depth - 1, -beta, -alpha)
            if value > best_value:
                best_value, best_move = value, c
            alpha = max(alpha, value)
        return best_value, best_move

    def _order(self, mine: int, mask: int, columns: list[int], first: int | None) -> list[int]:
        """Sort ``columns`` by threats created (centre breaks ties), with ``first`` in front."""
        scored = []
        for rank, c in enumerate(columns):
            bit = (mask + (1 << (c * H1))) & COLUMN[c]
            created = _popcount(winning_cells(mine | bit, mask | bit))
            scored.append((c != first, -created, rank, c))
        scored.sort()
        return [c for *_, c in scored]

    def _negamax(self, mine: int, mask: int, ply: int, depth: int, alpha: int, beta: int) -> int:
        """Score for the player to move (pieces ``mine``); the previous move did not win."""
        self._nodes += 1
        if self.node_limit is not None and self._nodes > self.node_limit:
            raise _OutOfBudget
        if not self._nodes % TIME_CHECK_INTERVAL and time.perf_counter() > self._deadline:
            raise _OutOfBudget
        possible = (mask + BOTTOM) & BOARD
        if not possible:
            return 0  # board full: draw
        my_wins = winning_cells(mine, mask)
        if my_wins & possible:
            return WIN - ply - 1
        their_wins = winning_cells(mine ^ mask, mask)
        forced = possible & their_wins
        if forced:
            if forced & (forced - 1):
                return -(WIN - ply - 2)  # two threats to block: lost
            candidates = forced
        else:
            candidates = possible
        candidates &= ~(their_wins >> 1)  # never fill the cell just below an opponent threat
        if not candidates:
            return -(WIN - ply - 2)
        if depth <= 0:
            return self._evaluate(mine, mask, my_wins, their_wins)

        key = mine + mask
        entry = self._tt.get(key)
        tt_move = None
        if entry is not None:
            e_depth, flag, e_value, tt_move = entry
            if e_depth >= depth:
                if flag == EXACT:
                    return e_value
                if flag == LOWER:
                    alpha = max(alpha, e_value)
                else:
                    beta = min(beta, e_value)
                if alpha >= beta:
                    return e_value

        columns = [c for c in CENTRE_ORDER if candidates & COLUMN[c]]
        if len(columns) > 1:
            columns = self._order(mine, mask, columns, tt_move)
        alpha0 = alpha
        best_value, best_move = -WIN - 1, columns[0]
        opponent = mine ^ mask
        for c in columns:
            value = -self._negamax(
                opponent, mask | (candidates & COLUMN[c]), ply + 1, depth - 1, -beta, -alpha
            )
            if value > best_value:
                best_value, best_move = value, c
                if value > alpha:
                    alpha = value
                    if alpha >= beta:
                        break
        flag = UPPER if best_value <= alpha0 else LOWER if best_value >= beta else EXACT
        self._tt[key] = (depth, flag, best_value, best_move)
        return best_value

    @staticmethod
    def _evaluate(mine: int, mask: int, my_wins: int, their_wins: int) -> int:
        """Heuristic score for the player to move: threats, threats on favourable rows, centre."""
        theirs = mine ^ mask
        i_started = not _popcount(mask) & 1  # even piece count: I moved first in this match
        my_rows, their_rows = (ODD_ROWS, EVEN_ROWS) if i_started else (EVEN_ROWS, ODD_ROWS)
        score = 16 * (_popcount(my_wins) - _popcount(their_wins))
        score += 12 * (_popcount(my_wins & my_rows) - _popcount(their_wins & their_rows))
        for cells, weight in CENTRE_WEIGHTS:
            score += weight * (_popcount(mine & cells) - _popcount(theirs & cells))
        return score
