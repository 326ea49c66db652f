"""Common eval files read as they are: a row without our ``id``/``prompt`` columns that has
the columns of HumanEval, MBPP, GSM8K or MATH-500 becomes a task for our verifier of that
kind (``pytest`` for code, ``math`` for answers). Other rows pass through unchanged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Row = dict[str, Any]


def humaneval(row: Row, line: int) -> Row:
    keep = {"test": row["test"], "entry_point": row["entry_point"], "prompt": row["prompt"]}
    return {"id": row["task_id"], "prompt": row["prompt"], "verifier": "pytest",
            "reference": keep}  # fmt: skip


def mbpp(row: Row, line: int) -> Row:
    tests = [f"def test_{i}():\n    {case}\n" for i, case in enumerate(row["test_list"])]
    source = "from solution import *\n\n\n" + "\n\n".join(tests)
    prompt = f"{row['text']}\nYour code should pass these tests:\n" + "\n".join(row["test_list"])
    return {"id": f"mbpp-{row['task_id']}", "prompt": prompt, "verifier": "pytest",
            "reference": {"tests": source, "expected_tests": len(tests)}}  # fmt: skip


def gsm8k(row: Row, line: int) -> Row:
    answer = str(row["answer"]).rsplit("####", 1)[1].strip().replace(",", "")
    return {"id": f"gsm8k-{line}", "prompt": row["question"], "verifier": "math",
            "reference": {"answer": answer}}  # fmt: skip


def math500(row: Row, line: int) -> Row:
    metadata = {key: row[key] for key in ("subject", "level") if key in row}
    return {"id": row["unique_id"], "prompt": row["problem"], "verifier": "math",
            "reference": {"answer": str(row["answer"])}, "metadata": metadata}  # fmt: skip


def _is_gsm8k(row: Row) -> bool:
    return set(row) >= {"question", "answer"} and "####" in str(row["answer"])


FORMATS: list[tuple[str, Callable[[Row], bool], Callable[[Row, int], Row]]] = [
    ("HumanEval", lambda r: set(r) >= {"task_id", "prompt", "test", "entry_point"}, humaneval),
    ("MBPP", lambda r: set(r) >= {"task_id", "text", "test_list"}, mbpp),
    ("GSM8K", _is_gsm8k, gsm8k),
    ("MATH-500", lambda r: set(r) >= {"problem", "answer", "unique_id"}, math500),
]


def as_task(row: Row, line: int) -> Row:
    """``row`` as a task row: unchanged when it has an ``id``, else converted from the first
    known format whose columns it has (``line`` numbers GSM8K's id-less rows)."""
    if "id" in row:
        return row
    for _name, matches, convert in FORMATS:
        if matches(row):
            return convert(row, line)
    return row
