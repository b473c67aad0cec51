"""Train against an arena's league: its public agents as opponents, run on this machine in the arena's own
sandbox and harness, picked by prioritized fictitious self-play (PFSP) from the trainer's own results.

    from rl_arena_client.api import Client
    from rl_arena_client.league import LeagueEnv, OpponentPool, fetch_league

    pool = OpponentPool(fetch_league(Client("https://arena.example"), "connect-four", cache_dir))
    env = LeagueEnv("connect-four", pool)            # a gymnasium.Env: the learner's seat only
    obs, info = env.reset(seed=0)                    # info["opponent"]: whom it plays this episode
    obs, reward, terminated, truncated, info = env.step(action)

- **Opponents** (``Opponent``): a fetched public agent (its source zip, extracted under ``cache_dir``), a
  local agent folder, or an in-process policy (``PolicyOpponent``: the trainer's own snapshots for
  self-play, ``pool.add_snapshot``). Folders run exactly as in a duel: a ``Seat`` of ``run_duel`` drives
  the arena's harness in the local sandbox (bubblewrap when installed), with the game's limits, so an
  opponent that crashes, times out or answers an illegal move loses the episode as it would lose the match.
- **PFSP** (``OpponentPool``): each episode's opponent is drawn with weight ``f(p)`` of the learner's win
  rate ``p`` against it (``hard``: ``(1 - p) ** power``, harder opponents more often; ``even``:
  ``p * (1 - p)``, the closest matches; ``uniform``), an opponent never played counting as ``p = 0.5``.
  The results are kept in a JSON file of the trainer's (``results_path``) so a run resumes them.
- **The episode** is one match: the learner sits in seat 0 or 1 (alternating, or fixed with
  ``learner_seat``), the opponent's moves are played inside ``reset``/``step``, the reward is +1 / -1 / 0
  at the end (an illegal learner action loses, like the referee judges it). Observations are the arena's
  own (what a submitted agent receives) with the action mask: ``{"observation", "action_mask"}``.
"""

from __future__ import annotations

import io
import json
import random
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from environments import get_game, get_info
from rl_arena_client.api import Client, CliError
from run_duel.api import LaunchSpec, PlayerFault, Sandbox, SandboxError, Seat, get_sandbox, limits_for

#: An opponent's source zip may hold at most this many bytes once extracted.
MAX_EXTRACTED_BYTES = 300 * 1024 * 1024
ENTRY_FILES = ("player.py", "main.py", "submission.py")
WEIGHTINGS = ("hard", "even", "uniform")
#: Opponents drawn in a row for one ``reset`` before giving up (each failed before the learner moved).
MAX_DRAWS = 20


@dataclass
class Opponent:
    """An agent folder the local sandbox runs (``player.py``, a Kaggle ``main.py`` or an rl-arena agent)."""

    name: str
    folder: Path
    agent_format: str = "native"


@dataclass
class PolicyOpponent:
    """An in-process opponent: ``policy(observation, action_mask) -> action`` (e.g. a snapshot of the
    learner for self-play). It runs unsandboxed: only for the trainer's own code."""

    name: str
    policy: Callable[[np.ndarray, np.ndarray], int]


AnyOpponent = Opponent | PolicyOpponent


# -- fetching the league ------------------------------------------------------------------------------


def _safe_extract(data: bytes, dest: Path) -> None:
    """Extract a source zip, refusing absolute paths, ``..``, links and more than ``MAX_EXTRACTED_BYTES``."""
    total = 0
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for info in zf.infolist():
            name = PurePosixPath(info.filename)
            if name.is_absolute() or ".." in name.parts or "\\" in info.filename:
                raise CliError(f"unsafe path in the agent's zip: {info.filename!r}")
            if (info.external_attr >> 16) & 0o170000 == 0o120000:
                raise CliError(f"symbolic link in the agent's zip: {info.filename!r}")
            total += info.file_size
            if total > MAX_EXTRACTED_BYTES:
                raise CliError("the agent's zip holds more than 300 MiB")
            target = dest.joinpath(*name.parts)
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                out.write(src.read(info.file_size + 1)[: info.file_size])


def _agent_root(folder: Path) -> Path | None:
    """The folder holding the entry file: the top, or the one folder inside it (as uploads allow)."""
    if any((folder / entry).is_file() for entry in ENTRY_FILES):
        return folder
    children = [c for c in folder.iterdir() if c.is_dir() and c.name != "__MACOSX"]
    if len(children) == 1 and any((children[0] / entry).is_file() for entry in ENTRY_FILES):
        return children[0]
    return None


def fetch_league(
    client: Client,
    slug: str,
    cache_dir: Path,
    *,
    limit: int | None = None,
    log: Callable[[str], None] = print,
) -> list[Opponent]:
    """The game's public, playing Python agents at their current revision, downloaded once into
    ``cache_dir/<slug>/`` (a revision's folder is reused as long as it exists)."""
    opponents: list[Opponent] = []
    for comp in client.pages(f"/api/competitors/?environment={slug}"):
        if limit is not None and len(opponents) >= limit:
            break
        brief = comp.get("latest_revision") or {}
        if not (comp.get("is_public") and comp.get("is_playing")):
            continue
        if brief.get("version") != comp.get("current_version"):
            continue  # its newest upload is not the one playing: skip rather than train on another
        revision = client.request("GET", f"/api/revisions/{brief['id']}/")
        if not revision.get("source_url"):
            continue  # its source is not public
        if (revision.get("language") or "python") != "python":
            log(f"skipped {comp['name']}: a {revision.get('language')} agent needs the Docker sandbox")
            continue
        folder = cache_dir / slug / f"{comp['id']}-{comp['name']}-v{revision['version']}"
        if not folder.is_dir():
            partial = folder.with_name(folder.name + ".part")
            partial.mkdir(parents=True, exist_ok=True)
            _safe_extract(client.fetch_bytes(revision["source_url"], accept="application/zip"), partial)
            partial.rename(folder)
        root = _agent_root(folder)
        if root is None:
            log(f"skipped {comp['name']}: no player.py or main.py in its source")
            continue
        opponents.append(Opponent(comp["name"], root, revision.get("agent_format") or "native"))
    return opponents


# -- prioritized fictitious self-play -------------------------------------------------------------------


@dataclass
class OpponentPool:
    """Opponents and the learner's results against each; ``sample`` draws by PFSP."""

    opponents: list[AnyOpponent] = field(default_factory=list)
    weighting: str = "hard"
    power: float = 2.0
    results_path: Path | None = None
    results: dict[str, list[float]] = field(default_factory=dict)  # name -> [score sum, games]

    def __post_init__(self) -> None:
        if self.weighting not in WEIGHTINGS:
            raise ValueError(f"weighting must be one of {', '.join(WEIGHTINGS)}")
        if self.results_path is not None and self.results_path.is_file():
            self.results = {k: list(v) for k, v in json.loads(self.results_path.read_text()).items()}
        names = [o.name for o in self.opponents]
        if len(set(names)) != len(names):
            raise ValueError("opponents need distinct names")

    def add(self, opponent: AnyOpponent) -> None:
        if any(o.name == opponent.name for o in self.opponents):
            raise ValueError(f"there is already an opponent named {opponent.name!r}")
        self.opponents.append(opponent)

    def add_snapshot(self, name: str, policy: Callable[[np.ndarray, np.ndarray], int]) -> None:
        """Add a frozen copy of the learner (self-play): ``policy`` must not change afterwards."""
        self.add(PolicyOpponent(name, policy))

    def win_rate(self, name: str) -> float:
        """The learner's score rate against ``name`` (win 1, draw 0.5); 0.5 when never played."""
        total, games = self.results.get(name, (0.0, 0.0))
        return total / games if games else 0.5

    def weight(self, name: str) -> float:
        p = self.win_rate(name)
        if self.weighting == "hard":
            return (1.0 - p) ** self.power + 1e-3  # never zero: a beaten opponent is still checked
        if self.weighting == "even":
            return p * (1.0 - p) + 1e-3
        return 1.0

    def sample(self, rng: random.Random) -> AnyOpponent:
        if not self.opponents:
            raise CliError("the opponent pool is empty")
        weights = [self.weight(o.name) for o in self.opponents]
        return rng.choices(self.opponents, weights=weights, k=1)[0]

    def record(self, name: str, score: float) -> None:
        """The learner scored ``score`` (1 win, 0.5 draw, 0 loss) against ``name``."""
        total, games = self.results.get(name, (0.0, 0.0))
        self.results[name] = [total + score, games + 1]
        if self.results_path is not None:
            self.results_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.results_path.with_name(self.results_path.name + ".tmp")
            tmp.write_text(json.dumps(self.results, indent=1))
            tmp.replace(self.results_path)


# -- driving an opponent ------------------------------------------------------------------------------


class _SeatDriver:
    """A sandboxed opponent kept running across episodes (an agent keeps its ``Player`` across the
    matches of a duel, as here), relaunched after a fault that broke its channel."""

    def __init__(self, opponent: Opponent, slug: str, sandbox: Sandbox) -> None:
        spec = LaunchSpec(
            agent=str(opponent.folder),
            agent_format=opponent.agent_format,
            game=slug,
            limits=limits_for(get_info(slug)),
        )
        self.seat = Seat(1, sandbox, spec, name=opponent.name)
        self.running = False

    def ensure_started(self) -> None:
        """Launch the agent if it is not running; its failure to start is a ``PlayerFault``."""
        if not self.running:
            self.seat.fatal = None
            self.seat.spawn()
            self.seat.await_ready()
            if self.seat.fatal is not None:
                raise self.seat.fatal
            self.running = True

    def act(self, observation: np.ndarray, legal: list[int], ply: int) -> int:
        self.ensure_started()
        action, _ = self.seat.move(observation.tolist(), legal, ply)
        return int(action)

    def end(self, observation: np.ndarray, reward: float) -> None:
        if self.running and self.seat.started:
            fault = self.seat.end(observation.tolist(), reward)
            if fault is not None and fault.desync:
                self.stop()
        self.seat.started = False

    def fault(self, exc: PlayerFault) -> None:
        if exc.desync:
            self.stop()
        self.seat.started = False

    def stop(self) -> None:
        if self.running:
            try:
                self.seat.say_close()
            finally:
                self.seat.discard()
            self.running = False


class LeagueEnv:
    """A single-agent ``gymnasium.Env`` whose opponent is drawn from ``pool`` every episode (the class
    is built on first use so that ``gymnasium`` stays optional; see the module docstring)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return _league_env_class()(*args, **kwargs)


def _league_env_class() -> type:
    import gymnasium
    from gymnasium import spaces

    class _LeagueEnv(gymnasium.Env):
        metadata = {"render_modes": []}

        def __init__(
            self,
            slug: str,
            pool: OpponentPool,
            *,
            learner_seat: int | None = None,
            sandbox: Sandbox | None = None,
            no_bwrap: bool = False,
        ) -> None:
            self.slug = slug
            self.game = get_game(slug)
            self.pool = pool
            self.learner_seat = learner_seat
            self._sandbox = sandbox
            self._no_bwrap = no_bwrap
            self._drivers: dict[str, _SeatDriver] = {}
            sample = np.asarray(self.game.observation(self.game.initial_state(), 0), dtype=np.float32)
            low, high = self.game.observation_bounds or (-np.inf, np.inf)
            self.observation_space = spaces.Dict(
                {
                    "observation": spaces.Box(low, high, sample.shape, np.float32),
                    "action_mask": spaces.Box(0, 1, (self.game.num_actions,), np.int8),
                }
            )
            self.action_space = spaces.Discrete(self.game.num_actions)
            self._episodes = 0
            self._rng = random.Random()
            self.state: Any = None
            self.seat = 0
            self.opponent: AnyOpponent | None = None
            self._ply = 0

        # the sandbox is opened on first use (a pool of in-process policies needs none)
        def _driver(self, opponent: Opponent) -> _SeatDriver:
            if opponent.name not in self._drivers:
                if self._sandbox is None:
                    try:
                        self._sandbox = get_sandbox("local", use_bwrap=False if self._no_bwrap else None)
                    except SandboxError as exc:
                        raise CliError(f"cannot start the local sandbox: {exc}") from None
                self._drivers[opponent.name] = _SeatDriver(opponent, self.slug, self._sandbox)
            return self._drivers[opponent.name]

        def _observe(self) -> dict[str, np.ndarray]:
            mask = np.zeros(self.game.num_actions, dtype=np.int8)
            if not self.game.is_over(self.state):
                mask[self.game.legal_actions(self.state)] = 1
            obs = np.asarray(self.game.observation(self.state, self.seat), dtype=np.float32)
            return {"observation": obs, "action_mask": mask}

        def _finish(self, learner_reward: float, info: dict[str, Any]) -> None:
            opponent_seat = 1 - self.seat
            if isinstance(self.opponent, Opponent) and not info.get("opponent_fault"):
                final = np.asarray(self.game.observation(self.state, opponent_seat))
                self._driver(self.opponent).end(final, -learner_reward)
            assert self.opponent is not None
            self.pool.record(self.opponent.name, (learner_reward + 1.0) / 2.0)

        def _opponent_moves(self, info: dict[str, Any]) -> float | None:
            """Play the opponent until the learner is to move or the game is over; the learner's reward
            when the opponent's fault ended the match (``None`` otherwise)."""
            opponent_seat = 1 - self.seat
            while not self.game.is_over(self.state) and self.game.to_move(self.state) == opponent_seat:
                obs = np.asarray(self.game.observation(self.state, opponent_seat))
                legal = self.game.legal_actions(self.state)
                assert self.opponent is not None
                if isinstance(self.opponent, PolicyOpponent):
                    mask = np.zeros(self.game.num_actions, dtype=np.int8)
                    mask[legal] = 1
                    action = int(self.opponent.policy(obs.astype(np.float32), mask))
                    if action not in legal:
                        info["opponent_fault"] = f"INVALID_ACTION: {action} is not legal"
                        return 1.0
                else:
                    driver = self._driver(self.opponent)
                    try:
                        action = driver.act(obs, legal, self._ply)
                    except PlayerFault as exc:
                        driver.fault(exc)
                        info["opponent_fault"] = f"{exc.kind}: {exc.message}"
                        return 1.0
                self.state = self.game.apply(self.state, action)
                self._ply += 1
            return None

        def _learner_reward(self) -> float:
            winner = self.game.winner(self.state)
            return 0.0 if winner is None else (1.0 if winner == self.seat else -1.0)

        def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
            super().reset(seed=seed)
            if seed is not None:
                self._rng.seed(seed)
            for _ in range(MAX_DRAWS):
                observed = self._start_episode()
                if observed is not None:
                    return observed
            raise CliError(f"{MAX_DRAWS} opponents in a row failed before the learner's first move")

        def _start_episode(self) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
            """Draw an opponent and play until the learner's first move; ``None`` when the match ended
            before it (the opponent failed: recorded as the learner's win, and another is drawn)."""
            self.opponent = self.pool.sample(self._rng)
            self.seat = self.learner_seat if self.learner_seat is not None else self._episodes % 2
            self._episodes += 1
            self.state = self.game.initial_state(self._rng.randrange(2**31))
            self._ply = 0
            info: dict[str, Any] = {"opponent": self.opponent.name, "seat": self.seat}
            ended = self._opponent_moves(info)
            if ended is not None or self.game.is_over(self.state):
                self._finish(ended if ended is not None else self._learner_reward(), info)
                return None
            return self._observe(), info

        def step(self, action: Any) -> Any:
            assert self.opponent is not None, "call reset() first"
            info: dict[str, Any] = {"opponent": self.opponent.name, "seat": self.seat}
            legal = self.game.legal_actions(self.state)
            if int(action) not in legal:
                info["illegal_action"] = f"{int(action)} is not among the legal actions {legal}"
                self._finish(-1.0, info)
                return self._observe(), -1.0, True, False, info
            self.state = self.game.apply(self.state, int(action))
            self._ply += 1
            ended = self._opponent_moves(info)
            if ended is not None:
                self._finish(ended, info)
                return self._observe(), ended, True, False, info
            if self.game.is_over(self.state):
                reward = self._learner_reward()
                self._finish(reward, info)
                return self._observe(), reward, True, False, info
            return self._observe(), 0.0, False, False, info

        def close(self) -> None:
            for driver in self._drivers.values():
                driver.stop()
            self._drivers.clear()
            if self._sandbox is not None:
                self._sandbox.close()
                self._sandbox = None

    return _LeagueEnv


def local_opponents(folders: Iterable[Path]) -> list[Opponent]:
    """Opponents from agent folders on this machine (the folder name is the opponent's name)."""
    return [Opponent(Path(f).name, Path(f)) for f in folders]
