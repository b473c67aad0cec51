"""Agents written for the original rl-arena (``RlArenaAdapter``): that project's states, valid actions and
rewards in tic-tac-toe, Connect Four and Quarto, and its actions translated back."""

from __future__ import annotations

import sys
from typing import Any

# -- the original rl-arena's format --------------------------------------------------------------------
#
# ``ARENA_AGENT_FORMAT=rl-arena``: a Player written for the original rl-arena project (github
# school-of-ai-angers/rl-arena, whose games this arena re-implements) plays unchanged. That project served
# its Player over HTTP (``Player(False)``; ``start(state, valid_actions)``, ``step(state, valid_actions,
# prev_reward)``, ``end(state, prev_reward)``; numpy arrays rebuilt from JSON, the action read back with
# ``int(action)``) and its match loop gave ``prev_reward`` = 0 during a match and, at the end, the win's
# reward to the winner and its negation to the loser. ``RlArenaAdapter`` rebuilds exactly those arguments
# from our observation for the seat and translates the action back; docs/PROTOCOL.md has the contract.


class RlArenaBoard:
    """Tic-tac-toe and Connect Four as rl-arena encoded them: the cells flattened row by row (row 0 at
    the top) holding 1 for the FIRST player's marks and -1 for the second's, then the player to move
    (1 or -1; at the end, the player who moved last), as float64. Actions are the same ids as ours; a
    win is worth 1. Who moved first is derived from the piece count at the agent's first turn."""

    win_reward = 1

    def __init__(self) -> None:
        self.sign = 1  # 1 when this seat moved first in the current match

    def new_match(self, cells: Any) -> None:
        self.sign = 1 if int((cells != 0).sum()) % 2 == 0 else -1

    def auto_action(self, cells: Any, valid_actions: Any) -> int | None:
        return None  # every decision of ours is one of theirs

    def state(self, cells: Any, *, final: bool = False) -> Any:
        import numpy as np

        out = np.empty(cells.size + 1, dtype=np.float64)
        out[:-1] = cells * self.sign
        if final:
            out[-1] = 1.0 if int((cells != 0).sum()) % 2 else -1.0  # rl-arena left the last mover there
        else:
            out[-1] = float(self.sign)
        return out

    def valid_actions(self, valid_actions: Any) -> Any:
        return valid_actions

    def action(self, action: int, theirs: Any) -> int:
        return action

    def moved(self, cells: Any, action: int) -> None:
        pass


class RlArenaQuarto:
    """Quarto as rl-arena encoded it: 17 int64, each cell's piece id or -1, then the piece to place;
    action ``16 * position + piece``; a win is worth 100.

    Two rules differ from ours. rl-arena's first player places piece 15 on the empty board (nobody
    chooses it), where ours has the opening player choose any piece. Flipping a bit of every piece (an
    attribute's two values swapped) maps a game onto an equivalent one, so the adapter relabels pieces
    with ``piece ^ mask``, ``mask = first piece ^ 15``, for the whole match: the agent always sees
    rl-arena's opening (piece 15 to place) and only states its environment could produce. When this seat
    opens it gives piece 15 itself without asking the agent (mask 0). And rl-arena places the last piece
    automatically where ours asks the player holding it (one legal action): the adapter answers that too.
    The final state's last value is the last piece handed over, as rl-arena left it; after an opponent's
    winning placement before the board is full, which piece the opponent named is not sent to this seat
    (the choice is void in both rule sets), so the lowest unused piece stands for it.
    """

    win_reward = 100

    def __init__(self) -> None:
        self.mask = 0
        self.handed = -1  # the piece handed over last, in our labels
        self.pieces_after_mine = -1  # pieces on the board after this seat's last action

    def new_match(self, cells: Any) -> None:
        first = int(cells[16])
        self.mask = 0 if first < 0 else first ^ 15
        self.handed = first
        self.pieces_after_mine = -1

    def auto_action(self, cells: Any, valid_actions: Any) -> int | None:
        if int(cells[16]) < 0:
            self.pieces_after_mine = 0
            self.handed = 15
            return 17 * 16 + 15  # the opening: hand over piece 15, as rl-arena's rules fix it
        if len(valid_actions) == 1 and int(valid_actions[0]) % 17 == 16:
            self.pieces_after_mine = 16
            self.handed = int(cells[16])
            return int(valid_actions[0])  # the last piece: rl-arena places it without asking
        return None

    def state(self, cells: Any, *, final: bool = False) -> Any:
        import numpy as np

        mask = self.mask
        out = np.array([v ^ mask if v >= 0 else -1 for v in cells.tolist()], dtype=np.int64)
        if not final:
            self.handed = int(cells[16])
            return out
        placed = int((cells[:16] >= 0).sum())
        if placed == 16 or placed == self.pieces_after_mine:
            out[16] = self.handed ^ mask if self.handed >= 0 else -1
        else:  # the opponent's winning placement: the piece it named is not known here
            unused = sorted(set(range(16)) - {int(v) for v in out[:16]})
            out[16] = unused[0] if unused else -1
        return out

    def valid_actions(self, valid_actions: Any) -> Any:
        import numpy as np

        mask = self.mask
        theirs = sorted(16 * (a // 17) + ((a % 17) ^ mask) for a in valid_actions.tolist())
        return np.asarray(theirs, dtype=np.int64)

    def action(self, action: int, theirs: Any) -> int:
        if not 0 <= action < 256 or action not in theirs.tolist():
            return -1  # not one of its valid_actions: the referee refuses it
        return 17 * (action // 16) + ((action % 16) ^ self.mask)

    def moved(self, cells: Any, action: int) -> None:
        self.pieces_after_mine = int((cells[:16] >= 0).sum()) + 1
        self.handed = action % 17


#: The games rl-arena had, by our slug (theirs: tic-tac-toe, connect-four, quarto).
RL_ARENA_GAMES: dict[str, type[RlArenaBoard | RlArenaQuarto]] = {
    "tic-tac-toe": RlArenaBoard,
    "connect-four": RlArenaBoard,
    "quarto": RlArenaQuarto,
}


def rl_arena_player(module: Any, entry: str, game: str) -> RlArenaAdapter:
    """Build an rl-arena agent's Player (``Player(False)``, as rl-arena did) wrapped for ``game``."""
    codec = RL_ARENA_GAMES.get(game)
    if codec is None:
        raise ValueError(
            f"the rl-arena format exists for {', '.join(RL_ARENA_GAMES)}; this game is {game or 'unknown'}: "
            "choose the native format (upload option) and read this game's state encoding"
        )
    player_class = getattr(module, "Player", None)
    if player_class is None:
        raise AttributeError(f"{entry}.py defines no Player class, which an rl-arena agent must")
    return RlArenaAdapter(player_class(False), codec())


class RlArenaAdapter:
    """Runs a Player written for the original rl-arena, giving it that project's state arrays,
    valid-action lists and rewards (``RlArenaBoard``, ``RlArenaQuarto``) and translating its actions.
    The agent's ``start`` is its first decision of a match, ``end`` comes only after a ``start`` (as in
    rl-arena, where a match that failed never called ``end``)."""

    def __init__(self, player: Any, codec: RlArenaBoard | RlArenaQuarto) -> None:
        self.player = player
        self.codec = codec
        self.started = False  # the agent got its start() in this match

    def start(self, state: Any, valid_actions: Any) -> Any:
        self.started = False
        self.codec.new_match(state.ravel())
        return self._act(state, valid_actions)

    def step(self, state: Any, valid_actions: Any, prev_reward: Any) -> Any:
        return self._act(state, valid_actions)

    def _act(self, state: Any, valid_actions: Any) -> Any:
        cells = state.ravel()
        auto = self.codec.auto_action(cells, valid_actions)
        if auto is not None:
            return auto
        theirs = self.codec.valid_actions(valid_actions)
        their_state = self.codec.state(cells)
        if self.started:
            action = self.player.step(their_state, theirs, 0)
        else:
            self.started = True
            action = self.player.start(their_state, theirs)
        try:
            chosen = int(action)  # rl-arena's server read the action back with int(action)
        except (TypeError, ValueError, OverflowError):
            return action  # the referee refuses it, saying what it was
        ours = self.codec.action(chosen, theirs)
        if ours < 0:
            print(
                f"rl-arena adapter: the Player returned {chosen}, not one of its valid_actions "
                f"{theirs.tolist()[:20]}{' ...' if len(theirs) > 20 else ''}",
                file=sys.stderr,
            )
        else:
            self.codec.moved(cells, ours)
        return ours

    def end(self, state: Any, prev_reward: Any) -> None:
        if not self.started:
            return None
        self.started = False
        reward = float(prev_reward) * self.codec.win_reward
        final = self.codec.state(state.ravel(), final=True)
        return self.player.end(final, int(reward) if reward.is_integer() else reward)
