"""Kaggle-style agents: the agent function a module defines, as Kaggle picks it, and ``KaggleAdapter``,
which gives it Kaggle's observation and configuration. Standard library only (numpy arrays come in)."""

from __future__ import annotations

from typing import Any


def kaggle_agent(module: object, entry: str) -> object:
    """The agent of a Kaggle-style module as Kaggle picks it (kaggle_environments executes the file and
    calls the last callable value of its namespace, in the order names were first bound, imported names
    and classes included). Our own convention for ``player.py``, a top-level function named ``agent``,
    comes first there."""
    namespace = vars(module)
    agent = namespace.get("agent")
    if entry == "player" and callable(agent):
        return agent
    found = [value for value in namespace.values() if callable(value)]
    if not found:
        raise AttributeError(
            f"{entry}.py defines neither a Player class nor a Kaggle-style agent function (Kaggle runs "
            "the last function of the file: agent(observation, configuration))"
        )
    return found[-1]


class KaggleStruct(dict):
    """A dict whose keys are also attributes, like Kaggle's ``Struct`` (``obs.board`` == ``obs["board"]``)."""

    def __getattr__(self, name: str) -> object:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: object) -> None:
        self[name] = value


class KaggleAdapter:
    """Runs a Kaggle-style ``agent(observation, configuration)`` as a Player.

    The game is inferred from the observation's shape: (6, 7) is ConnectX (``board``: 42 ints, row 0 at
    the top, 0 empty, 1 and 2 the marks; ``mark``: the agent's own, 1 when it moved first; the
    configuration has ``rows`` 6, ``columns`` 7, ``inarow`` 4; the agent returns a column) and (3, 3) is
    Kaggle's TicTacToe (``board``: 9 ints, returns a cell 0..8). Other games raise ``ValueError``.

    The clock is the referee's (``set_clock``, from ``start`` and ``step``): ``actTimeout`` (and its old
    name ``timeout``) is the per-move limit, ``remainingOverageTime`` what is left of the match's time
    bank, ``agentTimeout`` (Kaggle's obsolete name for the overage) the bank a match starts with. As
    Kaggle does, the agent gets as many of (observation, configuration) as its function declares.
    """

    CONFIGS = {
        (6, 7): {"rows": 6, "columns": 7, "inarow": 4},
        (3, 3): {"rows": 3, "columns": 3, "inarow": 3},
    }

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        code = getattr(agent, "__code__", None)
        self.nargs = getattr(code, "co_argcount", 2)  # Kaggle passes args[:co_argcount]
        self.move_timeout = 1.0
        self.bank_at_start = 0.0
        self.bank = 0.0

    def set_clock(self, msg: dict) -> None:
        """Read the referee's clock fields of a ``start`` or ``step`` message."""
        if "move_timeout" in msg:
            self.move_timeout = float(msg["move_timeout"])
            self.bank_at_start = float(msg.get("time_bank", 0.0))
        self.bank = float(msg.get("time_bank", self.bank))

    def start(self, state: Any, valid_actions: Any) -> Any:
        return self._act(state)

    def step(self, state: Any, valid_actions: Any, prev_reward: Any) -> Any:
        return self._act(state)

    def end(self, state: Any, prev_reward: Any) -> None:
        return None

    def _act(self, state: Any) -> Any:
        shape = tuple(getattr(state, "shape", ()))
        config = self.CONFIGS.get(shape)
        if config is None:
            raise ValueError(
                f"Kaggle-style agent(observation, configuration) is supported for ConnectX (6, 7) and "
                f"TicTacToe (3, 3) observations, not shape {shape}: write a Player class instead"
            )
        cells = [int(v) for v in state.ravel().tolist()]
        mine, theirs = cells.count(1), cells.count(-1)
        mark = 1 if mine == theirs else 2
        board = [0 if v == 0 else (mark if v == 1 else 3 - mark) for v in cells]
        observation = KaggleStruct(board=board, mark=mark, step=mine + theirs, remainingOverageTime=self.bank)
        configuration = KaggleStruct(
            config,
            episodeSteps=len(cells) + 1,
            actTimeout=self.move_timeout,
            timeout=self.move_timeout,
            agentTimeout=self.bank_at_start,
        )
        return self.agent(*(observation, configuration)[: self.nargs])
