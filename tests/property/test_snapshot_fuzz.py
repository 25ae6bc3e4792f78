"""A fuzzer for ``LlamaGame.from_dict``: thousands of seeded mutations of real snapshots.

Snapshots are taken from random games at 2 to 6 players and several hand sizes, at
random moments (the start, mid-round, just after a deal, after the game ended), then
mutated: wrong card codes and types, cards added, removed or moved, piles reordered,
scores, seats, flags and rule options changed, keys dropped or added, the generator
state broken. Every mutation must either be refused with a ``ValueError`` or
``TypeError`` whose message names the problem, or give a game that plays consistently:
the snapshot round trip is exact, the 56 cards stay conserved, there is a legal action
at every turn until the game ends, and the game ends.

    python tests/property/test_snapshot_fuzz.py [--mutations 20000] [--seed 0]

prints how the mutations ended.
"""

from __future__ import annotations

import argparse
import copy
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from llama_env.engine import COPIES_PER_VALUE, LlamaGame

PILES = ("hands", "draw_pile", "discard_pile")
BAD_VALUES: tuple[Any, ...] = (0, 8, -1, 3.0, "3", True, False, None, [3], 2**70, -(2**70), float("nan"))
SEAT_KEYS = ("current_player", "starter", "last_player")
INT_KEYS = ("num_players", "round", "end_score", "hand_size")
MAX_STEPS = 5000


def real_snapshots(seed: int, count: int) -> list[dict[str, Any]]:
    """Snapshots of random games at random moments, at 2..6 players and varied rules."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        n = int(rng.integers(2, 7))
        hand_size = int(rng.choice([1, 3, 6, (56 - 1) // n]))
        end_score = int(rng.choice([1, 10, 40]))
        g = LlamaGame(n, hand_size=hand_size, end_score=end_score, rng=int(rng.integers(2**31)))
        stops = sorted(rng.integers(0, 120, size=3).tolist())
        steps = 0
        for stop in stops:
            while steps < stop and not g.game_over:
                legal = g.legal_actions()
                g.step(legal[int(rng.integers(len(legal)))] if rng.random() < 0.8 else legal[-1])
                steps += 1
            out.append(json.loads(json.dumps(g.to_dict())))
    return out[:count]


def _pile_refs(d: dict[str, Any]) -> list[list[Any]]:
    hands = d.get("hands")
    refs = [h for h in hands if isinstance(h, list)] if isinstance(hands, list) else []
    refs += [d[k] for k in ("draw_pile", "discard_pile") if isinstance(d.get(k), list)]
    return refs


def mutate(d: dict[str, Any], rng: np.random.Generator) -> str:
    """Change ``d`` in place in one random way; return what was done."""
    kind = str(rng.choice(MUTATIONS))
    piles = _pile_refs(d)
    nonempty = [p for p in piles if p]
    if kind == "card_value" and nonempty:
        pile = nonempty[int(rng.integers(len(nonempty)))]
        i = int(rng.integers(len(pile)))
        pile[i] = BAD_VALUES[int(rng.integers(len(BAD_VALUES)))] if rng.random() < 0.5 else int(rng.integers(1, 8))
    elif kind == "card_add" and piles:
        pile = piles[int(rng.integers(len(piles)))]
        pile.insert(int(rng.integers(len(pile) + 1)), int(rng.integers(1, 8)))
    elif kind == "card_remove" and nonempty:
        pile = nonempty[int(rng.integers(len(nonempty)))]
        pile.pop(int(rng.integers(len(pile))))
    elif kind == "card_move" and nonempty:
        src = nonempty[int(rng.integers(len(nonempty)))]
        dst = piles[int(rng.integers(len(piles)))]
        dst.insert(int(rng.integers(len(dst) + 1)), src.pop(int(rng.integers(len(src)))))
    elif kind == "pile_shuffle" and nonempty:
        pile = nonempty[int(rng.integers(len(nonempty)))]
        rng.shuffle(pile)
    elif kind == "score" and isinstance(d.get("scores"), list) and d["scores"]:
        i = int(rng.integers(len(d["scores"])))
        d["scores"][i] = (
            BAD_VALUES[int(rng.integers(len(BAD_VALUES)))] if rng.random() < 0.3 else int(rng.integers(-3, 60))
        )
    elif kind == "seat":
        key = str(rng.choice(SEAT_KEYS))
        d[key] = BAD_VALUES[int(rng.integers(len(BAD_VALUES)))] if rng.random() < 0.3 else int(rng.integers(-1, 7))
    elif kind == "flag" and isinstance(d.get("quit"), list) and d["quit"]:
        i = int(rng.integers(len(d["quit"])))
        d["quit"][i] = (not d["quit"][i]) if rng.random() < 0.7 else BAD_VALUES[int(rng.integers(len(BAD_VALUES)))]
    elif kind == "game_over":
        d["game_over"] = not d.get("game_over") if rng.random() < 0.7 else "yes"
    elif kind == "int_key":
        key = str(rng.choice(INT_KEYS))
        d[key] = BAD_VALUES[int(rng.integers(len(BAD_VALUES)))] if rng.random() < 0.3 else int(rng.integers(-1, 12))
    elif kind == "missing_key":
        keys = sorted(d)
        if keys:
            del d[keys[int(rng.integers(len(keys)))]]
    elif kind == "extra_key":
        d[f"extra_{int(rng.integers(100))}"] = int(rng.integers(10))
    elif kind == "wrong_type":
        keys = sorted(d)
        if keys:
            key = keys[int(rng.integers(len(keys)))]
            d[key] = [tuple(d[key]) if isinstance(d[key], list) else [d[key]], str(d[key]), {"x": 1}, None][
                int(rng.integers(4))
            ]
    elif kind == "rng" and isinstance(d.get("rng_state"), dict):
        _mutate_rng(d["rng_state"], rng)
    elif kind == "history" and isinstance(d.get("history"), dict):
        _mutate_history(d["history"], rng)
    else:
        kind += " (no-op)"
    return kind


def _mutate_history(h: dict[str, Any], rng: np.random.Generator) -> None:
    """Change the round's public record: a count, a quit, a seat, a type, a key."""
    choice = int(rng.integers(6))
    key = str(rng.choice(["moves", "played", "drew_on", "quit_on", "quit_at"]))
    value = h.get(key)
    if choice <= 1 and isinstance(value, list) and value:
        p = int(rng.integers(len(value)))
        row = value[p]
        if isinstance(row, list) and row:  # a per-value count of a seat
            row[int(rng.integers(len(row)))] += int(rng.choice([-1, 1, 2]))
        else:
            value[p] = int(rng.integers(-1, 9)) if choice == 0 else BAD_VALUES[int(rng.integers(len(BAD_VALUES)))]
    elif choice == 2 and key == "moves":
        h["moves"] = int(rng.integers(-1, 120))
    elif choice == 3 and isinstance(value, list) and value:
        value.pop(int(rng.integers(len(value))))  # a seat missing
    elif choice == 4:
        h[key] = BAD_VALUES[int(rng.integers(len(BAD_VALUES)))]
    else:
        h.pop(key, None)


def _mutate_rng(state: dict[str, Any], rng: np.random.Generator) -> None:
    choice = int(rng.integers(6))
    inner = state.get("state")
    if choice == 0:
        state["bit_generator"] = str(rng.choice(["SFC64", "Philox", "MT19937", "BitGenerator", "seed", "nope"]))
    elif choice == 1 and isinstance(inner, dict) and inner:
        key = sorted(inner)[int(rng.integers(len(inner)))]
        inner[key] = [-1, 2**130, "x", None, 1.5][int(rng.integers(5))]
    elif choice == 2:
        state["has_uint32"] = [-1, 2, "x", None][int(rng.integers(4))]
    elif choice == 3:
        state["uinteger"] = [-1, 2**40, "x"][int(rng.integers(3))]
    elif choice == 4 and state:
        del state[sorted(state)[int(rng.integers(len(state)))]]
    else:
        state["state"] = [1, 2, 3]


MUTATIONS = (
    "history",
    "card_value",
    "card_add",
    "card_remove",
    "card_move",
    "pile_shuffle",
    "score",
    "seat",
    "flag",
    "game_over",
    "int_key",
    "missing_key",
    "extra_key",
    "wrong_type",
    "rng",
)


def check_plays_consistently(g: LlamaGame, rng: np.random.Generator) -> None:
    """The accepted game round-trips exactly, conserves the 56 cards and ends."""
    snap = g.to_dict()
    assert LlamaGame.from_dict(json.loads(json.dumps(snap))).to_dict() == snap, "round trip changed the state"
    for step in range(MAX_STEPS):
        if g.game_over:
            assert g.legal_actions() == []
            return
        counts = [0] * 8
        for p in range(g.num_players):
            for c, k in enumerate(g.hand_counts(p)):
                counts[c] += k
        for c in g.draw_pile:
            counts[c] += 1
        for c in g.discard_pile:
            counts[c] += 1
        assert counts[1:] == [COPIES_PER_VALUE] * 7, f"cards not conserved at step {step}: {counts}"
        legal = g.legal_actions()
        assert legal, "no legal action in a running game"
        g.step(legal[int(rng.integers(len(legal)))])
        if step % 25 == 0:
            d = g.to_dict()
            assert LlamaGame.from_dict(d).to_dict() == d
    raise AssertionError(f"the game did not end within {MAX_STEPS} steps")


def fuzz(mutations: int, seed: int, on_outcome: Callable[[str, str], None] | None = None) -> Counter:
    """Run ``mutations`` mutations; return a count of outcomes. Raises AssertionError on
    the first mutation that ends in a wrong exception type or an inconsistent game."""
    rng = np.random.default_rng(seed)
    bases = real_snapshots(seed, max(50, mutations // 40))
    outcomes: Counter = Counter()
    for i in range(mutations):
        d = copy.deepcopy(bases[i % len(bases)])
        done = [mutate(d, rng) for _ in range(int(rng.integers(1, 3)))]
        frozen = copy.deepcopy(d)
        try:
            g = LlamaGame.from_dict(d, rng=int(rng.integers(2**31)))
        except (ValueError, TypeError) as exc:
            message = str(exc)
            assert message and ("snapshot" in message or "must" in message), f"{done}: unhelpful error {message!r}"
            outcome = f"refused ({type(exc).__name__})"
        except Exception as exc:  # noqa: BLE001 - any other exception type is the finding
            raise AssertionError(f"mutation {done} raised {type(exc).__name__}: {exc}; snapshot {frozen}") from exc
        else:
            try:
                check_plays_consistently(g, rng)
            except AssertionError as exc:
                raise AssertionError(f"mutation {done} was accepted but {exc}; snapshot {frozen}") from None
            outcome = "accepted, played consistently"
        assert repr(d) == repr(frozen), "from_dict changed the caller's dict"
        outcomes[outcome] += 1
        if on_outcome is not None:
            on_outcome(" + ".join(done), outcome)
    return outcomes


def test_snapshot_fuzzer():
    outcomes = fuzz(8000, seed=20261130)
    assert sum(outcomes.values()) == 8000
    assert outcomes["accepted, played consistently"] > 100  # mutations that keep a real state (extra keys...)
    assert outcomes["refused (ValueError)"] > 2000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mutations", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    by_kind: Counter = Counter()
    outcomes = fuzz(args.mutations, args.seed, lambda kind, outcome: by_kind.update([(kind.split(" + ")[0], outcome)]))
    print(f"{args.mutations} mutations, seed {args.seed}:")
    for outcome, k in outcomes.most_common():
        print(f"  {outcome:<32} {k:>6}")
    print("by (first) mutation:")
    for (kind, outcome), k in sorted(by_kind.items()):
        print(f"  {kind:<14} {outcome:<32} {k:>6}")


if __name__ == "__main__":
    main()
