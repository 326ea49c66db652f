"""Score every proof form on every task with the real kernel, through the `lean` verifier as
the recipe configures it (lean.toml's `verifier_config`), and print per shape which forms it
accepts, the chance rate of a form drawn at random (the format-only warm-up's policy), and the
held-out rate of always answering the same form (the recipe's `baseline_reward`). Other
answers given as arguments are scored too and count for the constant baseline, not for the
chance rate (the warm-up never shows them). Exits 1 when a task has no accepted form or a
check is not `ok`.

Needs a Lean REPL (`rlv lean doctor`), e.g.
`RLV_LEAN_REPL=$PWD/../shared/lean4-2021/repl python examples/lean/check_forms.py 'id'`.
"""

from __future__ import annotations

import json
import sys
import time
import tomllib
from collections import defaultdict
from statistics import fmean
from typing import Any

from make_lean import FORMS, HERE, SHAPES

from rl_verifier import Scorer


def rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (HERE / name).read_text().splitlines() if line.strip()]


def main(extra: list[str]) -> int:
    forms = [*FORMS, *(f for f in extra if f not in FORMS)]
    settings = tomllib.loads((HERE / "lean.toml").read_text()).get("verifier_config", {})
    splits = {"train": rows("tasks.jsonl"), "heldout": rows("heldout.jsonl")}
    checks = [(t, form) for ts in splits.values() for t in ts for form in forms]
    pairs = [(t, f"```lean\n{form}\n```") for t, form in checks]
    start = time.perf_counter()
    with Scorer("lean", settings) as scorer:
        scores = scorer.score_many(pairs)
    took = time.perf_counter() - start
    print(f"{len(pairs)} proofs checked in {took:.0f} s ({len(pairs) / took:.1f} proofs/s)")
    bad = [(t["id"], s.status.value, s.error) for (t, _), s in zip(pairs, scores, strict=True)
           if s.status.value != "ok"]  # fmt: skip
    accepted: dict[str, set[str]] = defaultdict(set)  # task id -> forms with reward 1
    for (task, form), score in zip(checks, scores, strict=True):
        if score.reward == 1.0:
            accepted[task["id"]].add(form)
    failed = bad + [(t["id"], "no form accepted", "") for ts in splits.values() for t in ts
                    if not accepted[t["id"]] & set(FORMS)]  # fmt: skip
    for split, tasks in splits.items():
        print(f"\n{split} ({len(tasks)} tasks): share of a shape's tasks each form proves")
        print("| shape | tasks | " + " | ".join(f"`{f}`" for f in forms) + " |")
        print("|---" * (len(forms) + 2) + "|")
        for shape in SHAPES:
            group = [t for t in tasks if t["metadata"]["shape"] == shape]
            share = [fmean(f in accepted[t["id"]] for t in group) for f in forms]
            print(f"| {shape} | {len(group)} | " + " | ".join(f"{s:.2f}" for s in share) + " |")
        chance = fmean(len(accepted[t["id"]] & set(FORMS)) / len(FORMS) for t in tasks)
        constant = {f: fmean(f in accepted[t["id"]] for t in tasks) for f in forms}
        best = max(constant.values())
        tied = " or ".join(f"`{f}`" for f in forms if constant[f] == best)
        print(f"a form drawn at random: {chance:.3f}; always {tied}: {best:.3f}")
    for failure in failed[:20]:
        print("FAILED", *failure, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
