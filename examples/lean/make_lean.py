"""Write the Lean recipe's tasks: a family of core-Lean theorems in six shapes, each proved by
the one proof form of ``FORMS`` that fits its shape, for a small model and the Lean 4 of 2021.

Files (all deterministic):

* ``tasks.jsonl``: the training theorems, ``TRAIN_PER_SHAPE`` of each shape;
* ``heldout.jsonl``: ``HELD_OUT_PER_SHAPE`` of each shape whose statements never occur in
  training (other numbers, other variable names, other theorem names);
* ``warmup.jsonl``: each training task paired with its known proof for about half the tasks
  (``KNOWN_SHARE``) and with one of ``FORMS`` drawn at random for the rest: noisy demonstrations
  the environment writes, so a warm start teaches the answer's format and, weakly, which form
  fits which shape, and RL has the rest to do.

Each reference is what the `lean` verifier reads: the trusted statement and the header
``import Init`` (a blank header would mean `import Mathlib`). ``metadata`` holds the shape and
a known proof for people reading the files; the verifier never sees them. Which forms the
kernel accepts for each task is measured by ``check_forms.py``, not assumed here.

Run: python examples/lean/make_lean.py
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from itertools import permutations, product
from pathlib import Path

HERE = Path(__file__).parent
HEADER = "import Init"
INSTRUCTION = "Prove this in Lean 4. Answer with the proof term in a ```lean block."
# The proof forms, one per shape: of these six, each shape's tasks are proved by its own form
# only (measured by check_forms.py), so no constant answer among them scores above 1/6 and a
# policy gains only by telling the shapes apart. (An earlier set had `by simp` beside `rfl` and
# `by decide`: it proved half the tasks alone, and RL collapsed onto it.)
FORMS = (
    "rfl",
    "by decide",
    "fun h => h",
    "fun h => And.intro h.2 h.1",
    "fun h => Or.inl h",
    "fun h => h.1",
)
KNOWN_SHARE = 0.5  # of warm-up rows that show the task's known proof; the rest a random form
TRAIN_PER_SHAPE = 34
HELD_OUT_PER_SHAPE = 10
# Variable names: held-out statements use names training never does.
PROPS = {"train": list("pqrsABCD"), "heldout": list("tuvwPQRS")}
NATS = {"train": list("nmkx"), "heldout": list("yzij")}

Body = Callable[[tuple[int, ...], str, str], str]  # (numbers, name, name) -> binders : goal


def closed_ne(n: tuple[int, ...], _: str, __: str) -> str:
    return f": {n[0]} ≠ {n[1]}"


def var_sum(n: tuple[int, ...], x: str, _: str) -> str:
    a, b = n
    return f"({x} : Nat) : {x} + {a} + {b} = {x} + {a + b}"


def imp_self(n: tuple[int, ...], p: str, q: str) -> str:
    return f"({p} {q} : Prop) : {q if n[0] else p} → {q if n[0] else p}"


def and_swap(_: tuple[int, ...], p: str, q: str) -> str:
    return f"({p} {q} : Prop) : {p} ∧ {q} → {q} ∧ {p}"


def or_intro(_: tuple[int, ...], p: str, q: str) -> str:
    return f"({p} {q} : Prop) : {p} → {p} ∨ {q}"


def and_left(_: tuple[int, ...], p: str, q: str) -> str:
    return f"({p} {q} : Prop) : {p} ∧ {q} → {p}"


# shape: (statement body, the numbers it draws from, whose names it uses, a known proof)
SHAPES: dict[str, tuple[Body, list[tuple[int, ...]], dict[str, list[str]], str]] = {
    "closed_ne": (closed_ne, list(permutations(range(2, 100), 2)), NATS, "by decide"),
    "var_sum": (var_sum, list(product(range(1, 10), repeat=2)), NATS, "rfl"),
    "imp_self": (imp_self, [(0,), (1,)], PROPS, "fun h => h"),
    "and_swap": (and_swap, [()], PROPS, "fun h => And.intro h.2 h.1"),
    "or_intro": (or_intro, [()], PROPS, "fun h => Or.inl h"),
    "and_left": (and_left, [()], PROPS, "fun h => h.1"),
}


def prompt(statement: str) -> str:
    return f"{INSTRUCTION}\n\n{statement} :="


def draw_bodies(rng: random.Random, shape: str) -> dict[str, list[str]]:
    """Statement bodies for each split. A held-out body is never a training one; where the
    shape has numbers enough, held-out numbers are never training ones either."""
    body, numbers, names, _ = SHAPES[shape]
    wanted = {"train": TRAIN_PER_SHAPE, "heldout": HELD_OUT_PER_SHAPE}
    fresh_numbers = len(numbers) >= sum(wanted.values())
    drawn: dict[str, list[str]] = {}
    used: set[tuple[int, ...]] = set()
    seen: set[str] = set()
    for split, count in wanted.items():
        options = {
            body(n, a, b): n
            for n in numbers
            if not (fresh_numbers and n in used)
            for a, b in permutations(names[split], 2)
        }
        keys = sorted(set(options) - seen)
        rng.shuffle(keys)
        # Few distinct bodies (the Prop shapes): repeat them under other theorem names.
        drawn[split] = [keys[i % len(keys)] for i in range(count)]
        used |= {options[k] for k in drawn[split]}
        seen |= set(drawn[split])
    return drawn


def build() -> dict[str, list[dict[str, object]]]:
    rng = random.Random(0)
    rows: dict[str, list[dict[str, object]]] = {"train": [], "heldout": []}
    for shape in SHAPES:
        for split, bodies in draw_bodies(rng, shape).items():
            rows[split] += [{"shape": shape, "body": body} for body in bodies]
    first = {"train": 1, "heldout": 501}  # theorem names differ between the splits too
    for split, found in rows.items():
        rng.shuffle(found)
        for index, row in enumerate(found):
            number = first[split] + index
            statement = f"theorem t{number} {row['body']}"
            shape = str(row["shape"])
            row.clear()
            row.update(
                id=f"lean-{split}-{number:03d}",
                prompt=prompt(statement),
                verifier="lean",
                reference={"statement": statement, "header": HEADER},
                metadata={"shape": shape, "known_proof": SHAPES[shape][3]},
            )
    return rows


def warmup(train: list[dict[str, object]]) -> list[dict[str, str]]:
    """One row per training task: its known proof with probability ``KNOWN_SHARE``, else a
    form drawn at random whatever the shape (a weak, noisy lesson in which form fits)."""
    rng = random.Random(1)
    rows = []
    for task in train:
        known = str(task["metadata"]["known_proof"])  # type: ignore[index]
        form = known if rng.random() < KNOWN_SHARE else rng.choice(FORMS)
        rows.append({"task_id": str(task["id"]), "completion": f"```lean\n{form}\n```"})
    return rows


def write(name: str, rows: list[dict[str, object]] | list[dict[str, str]]) -> None:
    with open(HERE / name, "w") as f:
        f.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    print(f"wrote {len(rows)} rows to {HERE / name}")


def main() -> None:
    rows = build()
    write("tasks.jsonl", rows["train"])
    write("heldout.jsonl", rows["heldout"])
    write("warmup.jsonl", warmup(rows["train"]))


if __name__ == "__main__":
    main()
