"""Write the Lean recipe's tasks: theorems of core Lean 4 (no Mathlib), one per line.

Each task's reference is what the `lean` verifier reads: the trusted statement and a header.
The header is `open Nat` (core Lean; a blank header would mean `import Mathlib`). The
known proofs are kept in metadata for people reading the file; the verifier never sees them.

Run: python examples/lean/make_lean.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
HEADER = "open Nat"
THEOREMS = {  # id: (statement, a proof that follows `:=`)
    "add-zero": ("theorem add_zero_ex (n : Nat) : n + 0 = n", "rfl"),
    "zero-add": ("theorem zero_add_ex (n : Nat) : 0 + n = n", "by simp"),
    "two-add-two": ("theorem two_add_two : 2 + 2 = 4", "rfl"),
    "succ-pos": ("theorem succ_pos_ex (n : Nat) : 0 < n + 1", "Nat.succ_pos n"),
    "le-refl": ("theorem le_refl_ex (n : Nat) : n ≤ n", "Nat.le_refl n"),
    "add-comm": ("theorem add_comm_ex (a b : Nat) : a + b = b + a", "Nat.add_comm a b"),
    "imp-self": ("theorem imp_self_ex (p : Prop) : p → p", "fun h => h"),
    "and-swap": ("theorem and_swap_ex (p q : Prop) (h : p ∧ q) : q ∧ p", "⟨h.2, h.1⟩"),
    "or-swap": ("theorem or_swap_ex (p q : Prop) (h : p ∨ q) : q ∨ p", "h.elim Or.inr Or.inl"),
    "append-nil": (
        "theorem append_nil_ex (xs : List Nat) : xs ++ [] = xs",
        "List.append_nil xs",
    ),
    "length-cons": (
        "theorem length_cons_ex (x : Nat) (xs : List Nat) : (x :: xs).length = xs.length + 1",
        "rfl",
    ),
    "lt-add-one": ("theorem lt_add_one_ex (a b : Nat) (h : a < b) : a < b + 1", "by omega"),
}


def prompt(statement: str) -> str:
    return (
        "Prove the following Lean 4 theorem (core Lean, no Mathlib). Answer with a ```lean "
        "block holding the proof that follows `:=` (a term, or `by` and tactics)."
        f"\n\n```lean\n{HEADER}\n\n{statement} :=\n```"
    )


def main() -> None:
    with open(HERE / "tasks.jsonl", "w") as f:
        for task_id, (statement, proof) in THEOREMS.items():
            task = {
                "id": f"lean-core-{task_id}",
                "prompt": prompt(statement),
                "verifier": "lean",
                "reference": {"statement": statement, "header": HEADER},
                "metadata": {"known_proof": proof},
            }
            f.write(json.dumps(task, ensure_ascii=False) + "\n")
    print(f"wrote {len(THEOREMS)} tasks to {HERE / 'tasks.jsonl'}")


if __name__ == "__main__":
    main()
