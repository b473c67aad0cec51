"""Local play with the arena's own code: the referee and rules (``run_duel``, ``environments``) and the
ladder's TrueSkill rules (``tournament_manager.ladder``), so a local result means what it means online.

* ``play``: one duel between two agents (the duel JSON the arena stores).
* ``tournament``: a round robin, every pair one duel, then a table ranked like the leaderboard (TrueSkill
  mu - 3 sigma, the same rater and parameters as the arena's defaults) with edition points (2 a duel won,
  1 a draw).
* ``check``: the smoke test the arena runs after a build (self-play, every rule enforced).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from environments import UnknownGameError, get_info
from rl_arena_client.api import CliError
from run_duel.api import (
    DEFAULT_DATA_MB,
    MB,
    AgentData,
    DataError,
    LaunchSpec,
    Limits,
    Sandbox,
    SandboxError,
    get_sandbox,
    load_host_folder,
    play_duel,
    smoke_test,
    store_in_host_folder,
)
from tournament_manager.editions import DuelOutcome, round_robin_pairs, standings
from tournament_manager.ladder import DuelRecord, RatingState, apply_duel
from tournament_manager.rating import get_rater

#: Duel result -> edition outcome for player 1 (``None``: our error, nobody scores).
_OUTCOME = {"PLAYER_1_WIN": 1.0, "PLAYER_2_WIN": 0.0, "DRAW": 0.5, "ERROR": None}


@dataclass(frozen=True)
class Agent:
    """A local agent: its folder and the name shown in tables."""

    folder: Path
    name: str
    agent_format: str = "native"  # run_duel.agent_formats: native, kaggle or rl-arena


def check_game(slug: str) -> None:
    """Raise ``CliError`` (listing the games) when ``slug`` is not a game of this client."""
    try:
        get_info(slug)
    except UnknownGameError as exc:
        raise CliError(str(exc)) from None


def open_sandbox(no_bwrap: bool = False) -> Sandbox:
    """The local sandbox (inside bubblewrap when it is installed, unless ``no_bwrap``)."""
    try:
        return get_sandbox("local", use_bwrap=False if no_bwrap else None)
    except SandboxError as exc:
        raise CliError(f"cannot start the local sandbox: {exc}") from None


def _spec(agent: Agent, seed: int | None, data: AgentData | None = None, data_mb: int = 0) -> LaunchSpec:
    env = {} if seed is None else {"ARENA_SEED": str(seed)}
    return LaunchSpec(
        agent=str(agent.folder),
        agent_format=agent.agent_format,
        env=env,
        limits=Limits(data_mb=data_mb),
        data=data,
    )


class Progress:
    """``done/total`` matches on one line of ``stream`` (rewritten in place on a terminal)."""

    def __init__(self, stream: TextIO, label: str) -> None:
        self.stream = stream
        self.label = label
        self.tty = stream.isatty()

    def __call__(self, done: int, total: int) -> None:
        if self.tty:
            self.stream.write(f"\r{self.label}: {done}/{total} matches")
            if done == total:
                self.stream.write("\n")
        elif done == total:
            self.stream.write(f"{self.label}: {total} matches played\n")
        self.stream.flush()


def play(
    slug: str,
    a: Agent,
    b: Agent,
    *,
    sandbox: Sandbox,
    matches: int | None = None,
    seed: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    record_states: bool = True,
    data_folders: tuple[str | None, str | None] = (None, None),
    notes: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """One duel, ``a`` as player 1; the duel JSON. ``data_folders``: each player's persistent data folder
    on this machine (``$ARENA_DATA_DIR`` in its sandbox), filled from it and overwritten with what the
    agent left there when it played to the end; ``notes`` hears what could not be saved."""
    data_mb = (get_info(slug).data_mb or DEFAULT_DATA_MB) if any(data_folders) else 0
    try:
        data = [load_host_folder(f, data_mb * MB) if f else None for f in data_folders]
    except DataError as exc:
        raise CliError(str(exc)) from exc
    duel = play_duel(
        slug,
        sandbox,
        _spec(a, seed, data[0], data_mb),
        _spec(b, None if seed is None else seed + 1, data[1], data_mb),
        matches=matches,
        on_progress=progress,
        record_states=record_states,
    )
    for folder, kept in zip(data_folders, data, strict=True):
        if folder and kept is not None:
            if kept.saved is not None:
                store_in_host_folder(kept.saved, folder, data_mb * MB)
            if kept.problem and notes is not None:
                notes(f"{folder}: {kept.problem}")
    return duel


@dataclass
class TableRow:
    """One agent's line in a local tournament's table."""

    rank: int
    name: str
    mu: float
    sigma: float
    points: int
    duels: int
    wins: int
    draws: int
    losses: int
    errors: int

    @property
    def skill(self) -> float:
        """The conservative skill mu - 3 sigma, the leaderboard's key."""
        return self.mu - 3 * self.sigma


def rank(agents: list[Agent], duels: list[tuple[Agent, Agent, dict[str, Any]]]) -> list[TableRow]:
    """The table after these duels: TrueSkill replayed match by match as the ladder does, plus points."""
    rater = get_rater("trueskill")
    states: dict[str, RatingState] = {}
    for i, (a, b, duel) in enumerate(duels):
        record = DuelRecord(
            duel_id=i,
            competitor_1=a.name,
            revision_1=a.name,
            competitor_2=b.name,
            revision_2=b.name,
            finished_at=None,
            match_results=[m["result"] for m in duel["matches"]],
        )
        apply_duel(states, record, rater)
    outcomes = [
        DuelOutcome(a.name, b.name, _OUTCOME.get(d["result"]), d["player_1_score"], d["player_2_score"])
        for a, b, d in duels
    ]
    points = {s.id: s for s in standings([x.name for x in agents], outcomes)}
    rows = []
    for agent in agents:
        state = states.get(agent.name) or RatingState(rater.initial())
        line = points[agent.name]
        rows.append(
            TableRow(
                rank=0,
                name=agent.name,
                mu=state.skill.mu,
                sigma=state.skill.sigma,
                points=line.points,
                duels=line.played,
                wins=state.wins,
                draws=state.draws,
                losses=state.losses,
                errors=state.errors,
            )
        )
    rows.sort(key=lambda r: (-r.skill, -r.points, r.name))
    for i, row in enumerate(rows):
        row.rank = i + 1
    return rows


def tournament(
    slug: str,
    agents: list[Agent],
    *,
    sandbox: Sandbox,
    matches: int | None = None,
    seed: int | None = None,
    log: TextIO = sys.stderr,
) -> tuple[list[TableRow], list[tuple[Agent, Agent, dict[str, Any]]]]:
    """A round robin: every pair plays one duel (in the arena's round order); the table and the duels."""
    by_name = {a.name: a for a in agents}
    duels = []
    for a_name, b_name in round_robin_pairs([a.name for a in agents]):
        a, b = by_name[a_name], by_name[b_name]
        duel = play(
            slug,
            a,
            b,
            sandbox=sandbox,
            matches=matches,
            seed=seed,
            progress=Progress(log, f"{a.name} vs {b.name}"),
            record_states=False,
        )
        duels.append((a, b, duel))
    return rank(agents, duels), duels


def check(slug: str, agent: Agent, *, sandbox: Sandbox, matches: int | None = None) -> tuple[bool, str]:
    """The arena's smoke test: the agent plays itself (two processes) with every rule enforced."""
    result = smoke_test(slug, sandbox, _spec(agent, None), matches=matches)
    return result.ok, result.reason
