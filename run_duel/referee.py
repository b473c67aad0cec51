"""The referee: plays the matches of one duel between two sandboxed agents and returns the duel JSON.

Rules it enforces (details in ``run_duel/README.md``):

* Both agents are launched once per duel and keep the same ``Player`` object across matches. Player 1
  moves first in match 0, then the first move alternates.
* Every reply has a deadline and a byte cap (``Channel``). The referee alone decides the error kind:
  ``TIMEOUT, CRASH, INVALID_ACTION, MEMORY_LIMIT, OUTPUT_LIMIT, BAD_OUTPUT`` are charged to the player
  (``PLAYER_x_ERROR``: 0 for it, 1 for the opponent); ``INFRA`` (a bug or failure on our side) is
  ``OTHER_ERROR`` and charged to nobody.
* After an error that leaves the channel untrustworthy (timeout, broken or garbled channel, dead process)
  the agent is killed and relaunched for the next match, at most ``MAX_RELAUNCHES`` times per duel; after
  that, and after any failure to start (import error, slow ``__init__``), its remaining matches are
  charged to it. After an invalid action or an exception reported by the harness the channel is still
  in sync, so the same process continues.
* Each agent sees only ``game.observation(state, seat)``: in games with private information (Leduc
  Hold'em) that hides the opponent's cards, while the duel JSON keeps full states. It is stored once a
  match is over, so replays never show hidden information of a running match.
* Games with chance (``Game.has_chance``) are played in **duplicate**: matches ``2k`` and ``2k + 1`` are
  dealt from the same seed with the seats swapped, so both players meet the same luck from both sides.
  The seeds derive from the duel's seed (``play_duel(seed=...)``, random by default); the duel JSON
  records it (``seed``) and each match's (``seed``, and its initial state first in ``states``), so the
  seed and the actions replay every state. Games without chance keep the duel JSON they always had.
* A duel given a stop rule (``run_duel.stopping``; the platform passes one for ladder duels only) ends
  early once a sequential test on the match results finds one player clearly stronger. It is looked at
  only after an even number of matches, so a duplicate pair (and a pair of seat-swapped matches) is never
  split; the duel JSON says where and why it stopped (``stopped_early``) and counts the matches played.
* A simultaneous turn (``Game.acting_seats`` of two seats, Goofspiel) is asked one seat after the other,
  each with its own deadline while the other is frozen; both see the state the turn started in (the
  rules guarantee that seat 0's choice is invisible to seat 1), so choosing first gives nothing away and
  neither agent competes with the other for the CPU.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import logging
import secrets
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from environments import Game, GameInfo, IllegalActionError, get_game, get_info
from run_duel.agent_data import MB, save_from
from run_duel.cpu_slots import CpuSlot, claim_cpu_slot, pinning_enabled, slot_width
from run_duel.duel_result import (
    DRAW,
    ERROR,
    INFRA,
    MATCH_SCORES,
    OTHER_ERROR,
    PLAYER_ERROR,
    PLAYER_NAME,
    WIN,
    aggregate,
)
from run_duel.outcomes import ErrorKind
from run_duel.sandbox.base import AgentDataRefused, LaunchSpec, Limits, Sandbox, SandboxError
from run_duel.seat import PlayerFault, Seat, as_action, json_preview, ordinal_move
from run_duel.stopping import PAIR, SequentialTest, StopRule

__all__ = ["MAX_RELAUNCHES", "PlayerFault", "Referee", "as_action", "json_preview", "limits_for", "play_duel"]

log = logging.getLogger(__name__)

MAX_RELAUNCHES = 2
#: Characters of an agent's stderr kept in the duel JSON (``player_x_log``) and quoted in an error_msg.
DUEL_LOG_CHARS = 16 * 1024
#: How long agents may take to close their channel after ``close`` before they are killed (they lose
#: nothing by it).
CLOSE_GRACE_S = 0.1


#: The garbage collector's generation-0 threshold while a duel's matches are played (Python's default is
#: 700). A move allocates a dozen container objects (its state, message and reply), all freed by their
#: reference counts, and the duel keeps every state for its JSON, so at 700 the collector ran every ~50
#: moves and found nothing to free: ~1.7 µs of the in-process referee's ~19 µs of CPU per move
#: (bench_referee_move.py). Only cyclic garbage waits longer to be freed (at most this many allocations).
PLAY_GC_THRESHOLD = 10_000
_gc_lock = threading.Lock()
_gc_players = 0  # duels of this process inside ``_fewer_collections``
_gc_saved: tuple[int, int, int] | None = None
_gc_freezing = False  # duels freeze what each match leaves (``_fewer_collections``)


def _nothing() -> None:
    return None


@contextlib.contextmanager
def _fewer_collections() -> Iterator[Callable[[], None]]:
    """Raise the collector's generation-0 threshold to ``PLAY_GC_THRESHOLD`` for the block, then put back
    what was there. Duels playing at once in one process (threads) share it: the first one in raises it,
    the last one out restores it; a collector that is disabled (threshold 0) or already less eager is left
    alone, and so is a threshold someone else changed meanwhile.

    Yields what the duel calls after each match: ``gc.freeze`` where the threshold was raised, the
    collector is enabled and nothing in the process was frozen already (else nothing). A match's states
    stay in the duel JSON until the duel ends, and without it every collection of the older generations
    walked all of them again (about 7,300 of the 180,600 instructions of an in-process move, counted with
    callgrind); frozen, they are left out of collections, and still freed by their reference counts.
    Each duel's end unfreezes (another duel still playing freezes again after its next match), so cyclic
    garbage made meanwhile waits at most until a duel ends. A process that froze objects itself (e.g.
    before forking workers) is never unfrozen by a duel: nothing is frozen then."""
    global _gc_players, _gc_saved, _gc_freezing
    with _gc_lock:
        if _gc_players == 0:
            saved = gc.get_threshold()
            if 0 < saved[0] < PLAY_GC_THRESHOLD:
                _gc_saved = saved
                gc.set_threshold(PLAY_GC_THRESHOLD, saved[1], saved[2])
            else:
                _gc_saved = None
            _gc_freezing = _gc_saved is not None and gc.isenabled() and gc.get_freeze_count() == 0
        _gc_players += 1
        freezing = _gc_freezing
    try:
        yield gc.freeze if freezing else _nothing
    finally:
        with _gc_lock:
            _gc_players -= 1
            if freezing:
                gc.unfreeze()
            if _gc_players == 0:
                if _gc_saved is not None and gc.get_threshold()[0] == PLAY_GC_THRESHOLD:
                    gc.set_threshold(*_gc_saved)
                _gc_saved = None
                _gc_freezing = False


def limits_for(info: GameInfo, base: Limits | None = None) -> Limits:
    """The limits of a game's ``info.yml`` applied on top of ``base`` (default ``Limits()``). A game's
    ``data_mb`` replaces the base's data folder size only where the base gives agents a folder."""
    base = base or Limits()
    return dataclasses.replace(
        base,
        data_mb=info.data_mb if base.data_mb > 0 and info.data_mb is not None else base.data_mb,
        memory_mb=info.memory_limit_mb,
        cpus=info.cpu_limit,
        init_timeout=float(info.init_time_limit),
        move_timeout=float(info.move_time_limit),
        time_bank_s=float(info.time_bank_s),
    )


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "..." + text[-limit:]


def match_seed(duel_seed: int, index: int) -> int:
    """The chance seed of match ``index`` of a duel seeded ``duel_seed``: the same for the two matches of
    a duplicate pair (``2k`` and ``2k + 1``, seats swapped), a 31-bit int."""
    digest = hashlib.sha256(f"rl-arena-duel:{duel_seed}:{index // 2}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


class Referee:
    """Plays one duel; ``run`` returns the duel JSON dict."""

    def __init__(
        self,
        game: Game,
        slug: str,
        sandbox: Sandbox,
        specs: tuple[LaunchSpec, LaunchSpec],
        matches: int,
        *,
        on_progress: Callable[[int, int], None] | None = None,
        on_match: Callable[[int, dict[str, Any]], None] | None = None,
        record_states: bool = True,
        pin_cpus: bool = True,
        seed: int | None = None,
        stop_rule: StopRule | None = None,
    ) -> None:
        self.on_match = on_match
        #: The sequential test that may end the duel early (``run_duel.stopping``); ``None``: every match.
        self.stop_test = SequentialTest(stop_rule) if stop_rule is not None else None
        self.stopped_early: dict[str, Any] | None = None
        #: The duel's chance seed (games with chance only; ``None`` otherwise).
        self.seed = None if not game.has_chance else (secrets.randbelow(2**31) if seed is None else seed)
        self.game = game
        self.slug = slug
        self.sandbox = sandbox
        self.agents = (Seat(0, sandbox, specs[0]), Seat(1, sandbox, specs[1]))
        self.num_matches = matches
        self.on_progress = on_progress
        self.record_states = record_states
        self.pin_cpus = pin_cpus
        self.cpu_slot: CpuSlot | None = None
        self.infra_error = ""
        self.start_s = 0.0  # time spent starting agents (launch to ready and placement, relaunches too)

    # -- duel ----------------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """Play every match and build the duel JSON. Never raises for player or infrastructure errors."""
        started_at = datetime.now(UTC)
        t0 = time.perf_counter()
        results: list[dict[str, Any]] = []
        if self.pin_cpus:
            self.cpu_slot = claim_cpu_slot(slot_width(self.agents[0].limits.cpus))
        try:
            with _fewer_collections() as settle:
                for index in range(self.num_matches):
                    results.append(self.play_match(index))
                    settle()
                    if self.on_match is not None:
                        self.on_match(index, results[-1])
                    if self.on_progress is not None:
                        self.on_progress(index + 1, self.num_matches)
                    if self._decided(results):
                        break
        finally:
            closing = time.perf_counter()
            try:
                self._read_back_data()
                self._close(*self.agents)
            finally:
                if self.cpu_slot is not None:
                    self.cpu_slot.release()
            ended = time.perf_counter()
        duel = aggregate(results)
        duel["error_msg"] = ""
        if self.infra_error:
            duel["result"] = ERROR
            duel["error_msg"] = self.infra_error
        elif results and duel["other_errors"] == len(results):
            duel["result"] = ERROR
            duel["error_msg"] = (
                "every match failed because of an error on our side: " + results[0]["error_msg"]
            )
        duel["matches"] = results
        duel.update(
            {
                "player_1_log": _tail(self.agents[0].stderr_tail(), DUEL_LOG_CHARS),
                "player_2_log": _tail(self.agents[1].stderr_tail(), DUEL_LOG_CHARS),
                "player_1_relaunches": self.agents[0].relaunches,
                "player_2_relaunches": self.agents[1].relaunches,
                "environment": self.slug,
                "sandbox": getattr(self.sandbox, "name", type(self.sandbox).__name__),
                "cpus": sorted(self.cpu_slot.cpus) if self.cpu_slot is not None else None,
                "isolation": getattr(self.sandbox, "isolation", ""),
                "started_at": started_at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                # The phases partition the duel's time exactly (building this JSON is not part of it).
                "duration_s": round(ended - t0, 4),
                "phases_s": {
                    "start": round(self.start_s, 4),
                    "play": round(max(0.0, closing - t0 - self.start_s), 4),
                    "close": round(ended - closing, 4),
                },
            }
        )
        if self.seed is not None:
            duel["seed"] = self.seed
            duel["duplicate"] = True
        if self.stop_test is not None:
            duel["stop_rule"] = self.stop_test.rule.to_spec()
            duel["planned_matches"] = self.num_matches
            duel["stopped_early"] = self.stopped_early
        return duel

    def _decided(self, results: list[dict[str, Any]]) -> bool:
        """After a whole pair of matches (never inside a duplicate pair), whether the duel's stop rule
        ends it here; records why in ``stopped_early``. Matches are left to play, and nothing of ours
        failed in the pair."""
        test = self.stop_test
        played = len(results)
        if test is None or played % PAIR or played >= self.num_matches or self.infra_error:
            return False
        pair = results[-PAIR:]
        if any(m["result"] == OTHER_ERROR for m in pair):
            return False  # a match lost to our side says nothing about the players
        test.add_pair([(m["player_1_score"], m["player_2_score"]) for m in pair])
        leader = test.decided()
        if leader is None:
            return False
        self.stopped_early = {
            "after_matches": played,
            "leader": leader,
            "evidence": round(test.evidence, 3),
            "reason": test.reason(),
        }
        return True

    def _read_back_data(self) -> None:
        """Read each saving agent's data folder back (``run_duel.agent_data``) while it is still
        running, before ``close``: only an agent that played to the end of the duel saves."""
        for agent in self.agents:
            data = agent.spec.data
            if data is None or not data.save or data.refused or agent.spec.limits.data_mb <= 0:
                continue  # a refused folder is reset (Seat.refuse_data), never read back
            proc = agent.proc
            try:  # poll_exit asks the engine for a container: an engine failure is ours, never raised
                running = proc is not None and agent.fatal is None and proc.poll_exit() is None
                save_from(
                    data,
                    proc.data_root() if proc is not None else None,
                    agent.spec.limits.data_mb * MB,
                    running=running,
                )
            except Exception:  # never lose the duel over its data
                log.exception("reading %s's data folder failed", agent.name)
                data.problem = "the data folder could not be read because of an error on our side"

    def _close(self, *agents: Seat) -> None:
        """Say ``close`` to each running agent, give them a moment to close their channel (the harness
        does at once), then kill them: their logs hold what they wrote before closing."""
        running = [(a, a.proc) for a in agents if a.proc is not None]
        for agent, _ in running:
            try:
                agent.say_close()
            except Exception:
                log.exception("closing %s failed", agent.name)
        deadline = time.monotonic() + CLOSE_GRACE_S
        for _, proc in running:
            proc.channel.wait_closed(max(0.0, deadline - time.monotonic()))
        kill_many = getattr(self.sandbox, "kill_many", None)
        if len(running) > 1 and callable(kill_many):  # e.g. Docker: remove the containers concurrently
            kill_many([proc for _, proc in running])
        for agent, _ in running:
            agent.discard()

    def _ensure_running(self) -> None:
        """Launch (or relaunch) agents that are not running; raise ``SandboxError`` on infra failure.

        Agents start in parallel (``Sandbox.launch_many`` when the sandbox offers it, e.g. Docker, whose
        launch blocks until the harness connects), then we wait for each one's ``ready``.
        """
        # An agent past the relaunch cap has ``fatal`` set, so it is never launched again.
        spawn = [a for a in self.agents if a.proc is None and a.fatal is None]
        if not spawn:
            return
        t0 = time.perf_counter()
        try:
            launch_many = getattr(self.sandbox, "launch_many", None)
            if len(spawn) > 1 and callable(launch_many):
                try:
                    procs = launch_many([a.spec for a in spawn])
                except AgentDataRefused as exc:  # all or nothing: charge that seat, start the others alone
                    for agent in spawn:
                        if agent.spec is exc.spec:
                            agent.refuse_data(exc)
                else:
                    for agent, proc in zip(spawn, procs, strict=True):
                        agent.attach(proc)
            for agent in spawn:
                if agent.proc is None and agent.fatal is None:
                    agent.spawn()  # a data folder it cannot fill makes it fatal (Seat.refuse_data)
            for agent in spawn:
                agent.await_ready()
            self._place([agent for agent in spawn if agent.proc is not None])
        finally:
            self.start_s += time.perf_counter() - t0

    def _place(self, agents: list[Seat]) -> None:
        """Pin freshly started agents and the referee's thread to the duel's CPU slot (``cpu_slots``).

        Done after ``ready``: the agents' start-up (Python, numpy, player.py) runs in parallel first."""
        if self.cpu_slot is None or not agents:
            return
        cpus = self.cpu_slot.cpus
        procs = [agent.proc for agent in agents if agent.proc is not None]
        pin_many = getattr(self.sandbox, "pin_many", None)
        if len(procs) > 1 and callable(pin_many):  # e.g. Docker: one engine call per container
            pin_many(procs, cpus)
        else:
            for proc in procs:
                proc.pin_cpus(cpus)
        self.cpu_slot.pin_current_thread()

    # -- match ---------------------------------------------------------------------------------------

    def play_match(self, index: int) -> dict[str, Any]:
        """Play match ``index``; all errors become the match's result."""
        first = index % 2  # player index moving first (seat 0)
        seat_player = (first, 1 - first)
        match: dict[str, Any] = {
            "result": DRAW,
            "error_msg": "",
            "player_1_score": 0.0,
            "player_2_score": 0.0,
            "first_player": PLAYER_NAME[first],
            "states": [],
            "error_kind": None,
            "actions": [],
            "move_times": [],
            "num_moves": 0,
        }
        if self.seed is not None:
            match["seed"] = match_seed(self.seed, index)
        if self.infra_error:
            return self._finish(match, OTHER_ERROR, INFRA, "not played: " + self.infra_error)
        try:
            self._ensure_running()
        except SandboxError as exc:
            self.infra_error = f"the {getattr(self.sandbox, 'name', 'sandbox')} sandbox failed: {exc}"
            log.error("sandbox failure: %s", exc)
            return self._finish(match, OTHER_ERROR, INFRA, self.infra_error)
        except Exception:
            log.exception("launching agents failed")
            self.infra_error = "launching the agents failed (our bug):\n" + traceback.format_exc(limit=5)
            return self._finish(match, OTHER_ERROR, INFRA, self.infra_error)
        fatal = [a for a in (self.agents[first], self.agents[1 - first]) if a.fatal is not None]
        if fatal:
            fault = fatal[0].fatal
            assert fault is not None
            match = self._finish(match, PLAYER_ERROR[fatal[0].index], fault.kind, fault.message)
            if len(fatal) == 2:
                other = fatal[1].fatal
                assert other is not None
                match["player_1_score"] = match["player_2_score"] = 0.0
                match["error_msg"] += f"\n\nAlso {fatal[1].name}: {other.message}"
            return match
        try:
            return self._play(match, seat_player)
        except SandboxError as exc:  # e.g. the Docker engine restarted mid-match: stop, charge nobody
            log.error("sandbox failure during match %d: %s", index, exc)
            self.infra_error = f"the {getattr(self.sandbox, 'name', 'sandbox')} sandbox failed: {exc}"
            self._restart_after_our_failure()
            return self._finish(match, OTHER_ERROR, INFRA, self.infra_error)
        except Exception:
            log.exception("match %d of a %s duel failed on our side", index, self.slug)
            message = "internal error:\n" + traceback.format_exc(limit=8)
            self._restart_after_our_failure()
            return self._finish(match, OTHER_ERROR, INFRA, message)

    def _restart_after_our_failure(self) -> None:
        """After a failure on our side the agents' state in the match is unknown: start afresh. Both are
        closed together (a dead engine makes each removal wait its full patience, not twice in a row)."""
        running = [agent for agent in self.agents if agent.proc is not None]
        for agent in self.agents:
            agent.started = False
        self._close(*running)
        for agent in running:
            agent.launches -= 1  # a relaunch caused by us is not counted against the agent

    def _finish(self, match: dict[str, Any], result: str, kind: str | None, message: str) -> dict[str, Any]:
        match["result"] = result
        match["error_kind"] = kind
        match["error_msg"] = message
        match["player_1_score"], match["player_2_score"] = MATCH_SCORES[result]
        match["num_moves"] = len(match["actions"])
        return match

    def _play(self, match: dict[str, Any], seat_player: tuple[int, int]) -> dict[str, Any]:
        game = self.game
        agents = (self.agents[seat_player[0]], self.agents[seat_player[1]])
        actions: list[int] = match["actions"]
        move_times: list[float] = match["move_times"]
        states: list[dict[str, Any]] = match["states"]
        record = self.record_states
        for agent in agents:
            agent.started = False
        if "seed" in match:  # chance: the deal is in the initial state, so it is recorded too
            state = game.initial_state(match["seed"])
            if record:
                states.append(state)
        else:
            state = game.initial_state()
        fault: PlayerFault | None = None
        faulty: Seat | None = None
        is_over, to_move, legal_actions = game.is_over, game.to_move, game.legal_actions
        observation_value, apply = game.observation_value, game.apply
        while not is_over(state):
            seat = to_move(state)
            agent = agents[seat]
            legal = legal_actions(state)
            try:
                action, elapsed = agent.move(observation_value(state, seat), legal, len(actions))
            except PlayerFault as exc:
                fault, faulty = exc, agent
                break
            move_times.append(elapsed)  # to the microsecond (Seat.move)
            try:
                state = apply(state, action)
            except IllegalActionError as exc:
                fault = PlayerFault(
                    ErrorKind.INVALID_ACTION,
                    agent.with_log(f"{agent.name} played {action} at {ordinal_move(len(actions))}: {exc}"),
                    desync=False,
                )
                faulty = agent
                move_times.pop()
                break
            actions.append(action)
            if record:
                states.append(state)
        if fault is None:
            rewards = game.rewards(state)
            winner = game.winner(state)
            result = DRAW if winner is None else WIN[seat_player[winner]]
            self._finish(match, result, None, "")
            for seat, agent in enumerate(agents):
                end_fault = agent.end(game.observation_value(state, seat), rewards[seat])
                if end_fault is not None and fault is None:
                    fault, faulty = end_fault, agent
            if fault is None:
                return match
            assert faulty is not None
            self._finish(match, PLAYER_ERROR[faulty.index], fault.kind, fault.message)
            if fault.desync:
                self._after_desync(faulty, fault)
            return match
        assert faulty is not None
        self._finish(match, PLAYER_ERROR[faulty.index], fault.kind, fault.message)
        if fault.desync:
            self._after_desync(faulty, fault)
        # Tell whoever is still in sync that the match is over (the erring player lost, the other won).
        for seat, agent in enumerate(agents):
            if agent is faulty and fault.desync:
                continue
            reward = -1.0 if agent is faulty else 1.0
            end_fault = agent.end(game.observation_value(state, seat), reward)
            if end_fault is not None:
                match["error_msg"] += f"\n\nAlso, when told the match was over: {end_fault.message}"
                if end_fault.desync:
                    self._after_desync(agent, end_fault)
        return match

    def _after_desync(self, agent: Seat, fault: PlayerFault) -> None:
        """Kill an agent whose channel broke; cap the relaunches."""
        agent.started = False
        agent.discard()
        if agent.launches > MAX_RELAUNCHES:
            agent.fatal = PlayerFault(
                fault.kind,
                f"{agent.name} was already restarted {MAX_RELAUNCHES} times in this duel; "
                f"its remaining matches are charged to it. Last failure:\n{fault.message}",
                desync=True,
            )


def play_duel(
    game_slug: str | Game,
    sandbox: Sandbox,
    agent_1: LaunchSpec,
    agent_2: LaunchSpec,
    *,
    matches: int | None = None,
    limits: Limits | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    on_match: Callable[[int, dict[str, Any]], None] | None = None,
    record_states: bool = True,
    pin_cpus: bool | None = None,
    seed: int | None = None,
    stop_rule: StopRule | dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Play a duel and return the duel JSON (``run_duel/duel_result.schema.json``).

    ``game_slug`` names a registered game (or is a ``Game`` object, for tests). ``matches`` defaults to
    the game's ``matches_per_duel`` and ``limits`` to the game's ``info.yml`` limits; either replaces the
    ``limits`` of both launch specs. ``pin_cpus`` (default ``$DUEL_CPU_PINNING``, on) runs the referee
    and both agents on one free core once they are ready (``run_duel.cpu_slots``). ``on_match(index,
    match)`` is called with each match object as soon as it is played (the platform shows a running duel
    live), ``on_progress(done, total)`` after it. ``seed`` is the duel's chance seed in games with chance
    (random when ``None``; ignored otherwise): the same seed deals the same cards. Never raises for player
    errors or sandbox failures: they are in the result (``PLAYER_x_ERROR`` / ``ERROR``).

    ``stop_rule`` (a :class:`~run_duel.stopping.StopRule` or its ``to_spec()`` JSON; ``None``: play every
    match) lets the duel end after a whole pair of matches once the rule finds one player clearly
    stronger; the duel JSON then holds ``stop_rule``, ``planned_matches`` and ``stopped_early`` (``None``
    or where and why it stopped), and ``num_matches`` counts the matches played.
    """
    if isinstance(game_slug, Game):
        game = game_slug
        slug = game.slug
        info = None
    else:
        game = get_game(game_slug)
        slug = game_slug
        info = get_info(game_slug)
    if matches is None:
        matches = info.matches_per_duel if info is not None else 2
    if matches < 1:
        raise ValueError(f"matches must be a positive integer, got {matches}")
    if limits is None:
        limits = limits_for(info, agent_1.limits) if info is not None else agent_1.limits
    specs = (
        dataclasses.replace(agent_1, limits=limits, labels={**agent_1.labels, "seat": "1"}, game=slug),
        dataclasses.replace(agent_2, limits=limits, labels={**agent_2.labels, "seat": "2"}, game=slug),
    )
    referee = Referee(
        game,
        slug,
        sandbox,
        specs,
        matches,
        on_progress=on_progress,
        on_match=on_match,
        record_states=record_states,
        pin_cpus=pinning_enabled() if pin_cpus is None else pin_cpus,
        seed=seed,
        stop_rule=StopRule.from_spec(stop_rule),
    )
    return referee.run()
