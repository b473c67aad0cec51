"""Compute ``policy.json``: a Leduc Hold'em strategy by counterfactual regret minimisation (CFR+).

    python compute_policy.py [--iterations 1000] [--out policy.json]

Self-contained (standard library only). One hand of Leduc Hold'em (the arena's rules, those of the
research literature: antes of 1, bets of 2 then 4, two raises a round) is walked in full at every
iteration: the 30 deals of private cards, then the 4 possible public cards. Regrets are floored at zero
and the average strategy is weighted by the iteration (CFR+, Tammelin 2014), which converges to a Nash
equilibrium of the hand. The table maps an information set to the probabilities of fold, call and raise:

    key = "<my rank>|<public rank or ->|<round-1 actions>|<round-2 actions>"   e.g. "2|0|12|2"

ranks 0 J, 1 Q, 2 K; actions 0 fold, 1 call/check, 2 raise/bet, in order. With ``--check`` and OpenSpiel
installed, the exploitability of the table is measured with OpenSpiel's best response (the chips a best
responder wins per hand on average over both seats; 0 at an equilibrium).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

FOLD, CALL, RAISE = 0, 1, 2
RAISE_SIZE = (2, 4)
CARDS = range(6)  # rank = card // 2


def legal(pot: list[int], me: int, round_actions: list[int]) -> list[int]:
    """Call always, raise under the cap of two raises, fold only when facing a bet."""
    actions = [FOLD] if pot[me] < pot[1 - me] else []
    actions.append(CALL)
    if round_actions.count(RAISE) < 2:
        actions.append(RAISE)
    return actions


def key(card: int, public: int | None, history: list[list[int]]) -> str:
    public_text = "-" if public is None else str(public // 2)
    return f"{card // 2}|{public_text}|{''.join(map(str, history[0]))}|{''.join(map(str, history[1]))}"


def showdown_value(cards: tuple[int, int], public: int, pot: list[int]) -> float:
    """Chips player 0 (the first to act) wins at the showdown."""
    pair = [c // 2 == public // 2 for c in cards]
    if pair[0] != pair[1]:
        return pot[1] if pair[0] else -pot[0]
    r0, r1 = cards[0] // 2, cards[1] // 2
    return 0.0 if r0 == r1 else (pot[1] if r0 > r1 else -pot[0])


class CFRPlus:
    """Tabular CFR+ over one hand; ``average()`` is the strategy to play."""

    def __init__(self) -> None:
        self.regrets: dict[str, list[float]] = {}
        self.strategy_sum: dict[str, list[float]] = {}
        self.iteration = 0

    def current(self, info: str, actions: list[int]) -> list[float]:
        regrets = self.regrets.setdefault(info, [0.0, 0.0, 0.0])
        positive = [max(regrets[a], 0.0) for a in actions]
        total = sum(positive)
        return [p / total for p in positive] if total > 0 else [1.0 / len(actions)] * len(actions)

    def run(self, iterations: int) -> None:
        deals = [(a, b) for a in CARDS for b in CARDS if a != b]
        for _ in range(iterations):
            self.iteration += 1
            for traverser in (0, 1):  # alternating updates, as CFR+ prescribes
                for cards in deals:
                    self.walk(cards, None, [[], []], [1, 1], 0, traverser, 1.0, 1.0 / len(deals))

    def walk(
        self,
        cards: tuple[int, int],
        public: int | None,
        history: list[list[int]],
        pot: list[int],
        me: int,
        traverser: int,
        reach_me: float,
        reach_other: float,
    ) -> float:
        """Value for ``traverser`` of the node where ``me`` acts (reaches: the traverser's, the others')."""
        rnd = 0 if public is None else 1
        actions = legal(pot, me, history[rnd])
        info = key(cards[me], public, history)
        strategy = self.current(info, actions)
        values = []
        for action in actions:
            values.append(
                self.child(
                    cards,
                    public,
                    history,
                    pot,
                    me,
                    action,
                    traverser,
                    reach_me,
                    reach_other,
                    strategy[actions.index(action)],
                )
            )
        node_value = sum(p * v for p, v in zip(strategy, values, strict=True))
        if me == traverser:
            regrets = self.regrets[info]
            for action, value in zip(actions, values, strict=True):
                regrets[action] = max(regrets[action] + reach_other * (value - node_value), 0.0)
            sums = self.strategy_sum.setdefault(info, [0.0, 0.0, 0.0])
            for action, p in zip(actions, strategy, strict=True):
                sums[action] += self.iteration * reach_me * p
        return node_value

    def child(self, cards, public, history, pot, me, action, traverser, reach_me, reach_other, p) -> float:
        rnd = 0 if public is None else 1
        history = [list(history[0]), list(history[1])]
        history[rnd].append(action)
        pot = list(pot)
        sign = 1.0 if traverser == 0 else -1.0  # terminal values are player 0's
        if me == traverser:
            reach_me *= p
        else:
            reach_other *= p
        if action == FOLD:
            return sign * (-pot[0] if me == 0 else pot[1])
        if action == RAISE:
            pot[me] = pot[1 - me] + RAISE_SIZE[rnd]
            return self.walk(cards, public, history, pot, 1 - me, traverser, reach_me, reach_other)
        pot[me] = pot[1 - me]
        if len(history[rnd]) < 2:  # a check that opens the round
            return self.walk(cards, public, history, pot, 1 - me, traverser, reach_me, reach_other)
        if rnd == 1:
            return sign * showdown_value(cards, public, pot)
        publics = [c for c in CARDS if c not in cards]
        total = 0.0
        for card in publics:
            share = reach_other / len(publics)
            total += self.walk(cards, card, history, pot, 0, traverser, reach_me, share)
        return total / len(publics)

    def average(self) -> dict[str, list[float]]:
        table = {}
        for info, sums in sorted(self.strategy_sum.items()):
            total = sum(sums)
            table[info] = [round(s / total, 4) for s in sums] if total > 0 else [0.0, 1.0, 0.0]
        return table


def openspiel_exploitability(table: dict[str, list[float]]) -> float:
    """Exploitability (chips per hand) of ``table`` measured by OpenSpiel's best response."""
    import pyspiel
    from open_spiel.python import policy as policy_lib
    from open_spiel.python.algorithms import exploitability

    game = pyspiel.load_game("leduc_poker")

    class Table(policy_lib.Policy):
        def action_probabilities(self, state, player_id=None):
            text = state.information_state_string()
            fields = dict(part.split(": ", 1) for part in text.strip("[]").split("][") if ": " in part)
            card = int(fields["Private"])
            public = int(fields["Public"]) if "Public" in fields else None
            history = [[int(a) for a in fields.get(f"Round{r}", "").split()] for r in (1, 2)]
            probs = table[key(card, public, history)]
            return {a: probs[a] for a in state.legal_actions()}

    return exploitability.exploitability(game, Table(game, [0, 1]))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("policy.json"))
    parser.add_argument("--check", action="store_true", help="measure exploitability with OpenSpiel")
    args = parser.parse_args()
    solver = CFRPlus()
    t0 = time.perf_counter()
    solver.run(args.iterations)
    table = solver.average()
    args.out.write_text(json.dumps(table, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    elapsed = time.perf_counter() - t0
    print(f"{len(table)} information sets after {args.iterations} iterations in {elapsed:.1f} s")
    if args.check:
        print(
            f"exploitability: {openspiel_exploitability(table):.4f} chips per hand (OpenSpiel best response)"
        )


if __name__ == "__main__":
    main()
