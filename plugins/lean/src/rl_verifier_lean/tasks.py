"""The ``lean-example`` task set: a few tiny theorems."""

from __future__ import annotations

from rl_verifier import Task

HEADER = "import Mathlib\nopen Nat"
EXAMPLES = {
    "lean-one-add-one": ("theorem one_add_one : 1 + 1 = 2", "by norm_num"),
    "lean-add-zero": ("theorem add_zero' (n : ℕ) : n + 0 = n", "by simp"),
    "lean-le-refl": ("theorem le_refl' (a : ℕ) : a ≤ a", "le_refl a"),
    "lean-true": ("theorem true_holds : True", "by trivial"),
    "lean-hypothesis": ("theorem lt_succ_of_lt' (a b : ℕ) (h : a < b) : a < b + 1", "by omega"),
    "lean-instance": (
        "theorem add_comm' {G : Type*} [AddCommGroup G] (a b : G) : a + b = b + a",
        "add_comm a b",
    ),
}


def example_task(task_id: str) -> Task:
    statement, _ = EXAMPLES[task_id]
    prompt = (
        "Prove the following Lean 4 theorem (Mathlib available). Answer with a ```lean "
        f"block holding the proof that follows `:=`.\n\n```lean\n{HEADER}\n\n{statement} := by\n```"
    )
    return Task(
        id=task_id,
        prompt=prompt,
        verifier="lean",
        reference={"statement": statement, "header": HEADER},
    )


def example_tasks() -> list[Task]:
    return [example_task(task_id) for task_id in EXAMPLES]


def example_proof(task_id: str) -> str:
    return EXAMPLES[task_id][1]
