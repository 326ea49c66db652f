"""Parity with math-verify on the bundled pairs (data/parity.jsonl, written by
data/make_parity.py): our verdict is math-verify's on every pair except the reward hacks,
where ours is 0 (the departures are listed in the README)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from math_verify import parse, verify

from rl_verifier import Status, Task
from rl_verifier.testing import score_once
from rl_verifier_math import MathVerifier

PAIRS = Path(__file__).parent / "data" / "parity.jsonl"


def load_pairs() -> list[dict[str, Any]]:
    return [json.loads(line) for line in PAIRS.read_text().splitlines() if line.strip()]


def math_verify_verdict(row: dict[str, Any]) -> bool:
    """math-verify called directly: the reference as ``$...$`` LaTeX, the whole completion."""
    reference = row["reference"]
    gold = parse(reference if "####" in reference else f"${reference}$")
    return bool(verify(gold, parse(row["answer"])))


def our_verdicts(rows: list[dict[str, Any]]) -> list[bool]:
    tasks = [
        Task(id=r["id"], prompt=r.get("prompt", "Solve."), reference={"answer": r["reference"]})
        for r in rows
    ]
    scores = score_once(
        MathVerifier(), [(t, r["answer"]) for t, r in zip(tasks, rows, strict=True)]
    )
    assert all(s.status in (Status.OK, Status.INVALID) for s in scores), [
        (s.task_id, s.status, s.error)
        for s in scores
        if s.status not in (Status.OK, Status.INVALID)
    ]
    return [s.status is Status.OK and s.reward == 1.0 for s in scores]


def test_the_bundle_is_a_few_hundred_pairs_of_both_kinds() -> None:
    rows = load_pairs()
    assert len(rows) >= 300
    assert {True, False} <= {r["equivalent"] for r in rows}
    assert {"boxed", "answer_line", "final_answer", "gsm8k", "hack"} <= {r["form"] for r in rows}


def test_verdicts_match_math_verify_except_on_hacks() -> None:
    rows = load_pairs()
    ours = our_verdicts(rows)
    differ = []
    for row, verdict in zip(rows, ours, strict=True):
        if row["form"] == "hack":
            assert not verdict, row  # every hack scores 0
            continue
        if verdict != math_verify_verdict(row):
            differ.append((row["id"], row["reference"], row["answer"], verdict))
    assert not differ, differ


def test_departures_are_real_math_verify_pays_some_hacks() -> None:
    hacks = [r for r in load_pairs() if r["form"] == "hack" and r["hack"] != "giant"]
    paid = [r["id"] for r in hacks if math_verify_verdict(r)]
    assert len(paid) >= 10, paid
