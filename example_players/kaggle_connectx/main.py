"""A Kaggle ConnectX agent, unchanged from what Kaggle's ``kaggle_environments`` expects.

``agent(observation, configuration)``: ``observation.board`` is a flat list of rows * columns ints (row 0
at the top; 0 empty, 1 and 2 the players' marks), ``observation.mark`` is this agent's mark;
``configuration.columns``, ``.rows`` and ``.inarow`` give the board. It returns a column.

Strategy: win at once if possible, else block the opponent's immediate win, else avoid giving the
opponent a winning square right above, preferring central columns. Pure Python (no numpy).
"""

import random


def _drop_row(board, columns, rows, col):
    """Row where a piece dropped into ``col`` lands, or -1 if the column is full."""
    for row in range(rows - 1, -1, -1):
        if board[row * columns + col] == 0:
            return row
    return -1


def _wins(board, columns, rows, inarow, row, col, mark):
    """Whether ``mark`` placed at (row, col) makes ``inarow`` in a line."""
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        count = 1
        for sign in (1, -1):
            r, c = row + sign * dr, col + sign * dc
            while 0 <= r < rows and 0 <= c < columns and board[r * columns + c] == mark:
                count += 1
                r, c = r + sign * dr, c + sign * dc
        if count >= inarow:
            return True
    return False


def agent(observation, configuration):
    """Pick a column for ``observation.mark`` (Kaggle ConnectX interface)."""
    columns, rows, inarow = configuration.columns, configuration.rows, configuration.inarow
    board = list(observation.board)
    me = observation.mark
    them = 3 - me
    legal = [c for c in range(columns) if board[c] == 0]
    for mark in (me, them):  # win, else block
        for col in legal:
            row = _drop_row(board, columns, rows, col)
            if _wins(board, columns, rows, inarow, row, col, mark):
                return col
    safe = []
    for col in legal:
        row = _drop_row(board, columns, rows, col)
        if row > 0 and _wins(board, columns, rows, inarow, row - 1, col, them):
            continue  # playing here would let the opponent win on top
        safe.append(col)
    choices = safe or legal
    centre = (columns - 1) / 2
    best = min(abs(c - centre) for c in choices)
    return random.choice([c for c in choices if abs(c - centre) == best or random.random() < 0.3])
