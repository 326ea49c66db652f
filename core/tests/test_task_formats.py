"""HumanEval, MBPP, GSM8K and MATH-500 rows read as they are, scored by our verifiers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rl_verifier.files.jsonl import load_tasks

RLV = [sys.executable, "-c", "from rl_verifier.cli.app import main; main()"]
GSM8K = {"question": "Tom has 1,200 apples and eats 2. How many are left?",
         "answer": "1200 - 2 = <<1200-2=1198>>1198\n#### 1,198"}  # fmt: skip
MATH500 = {"problem": "What is $\\frac{1}{2} + \\frac{1}{4}$?", "solution": "$\\boxed{\\frac34}$",
           "answer": "\\frac{3}{4}", "subject": "Prealgebra", "level": 1,
           "unique_id": "test/prealgebra/1.json"}  # fmt: skip
HUMANEVAL = {"task_id": "HumanEval/0", "prompt": "def add(a, b):\n    \"\"\"Add.\"\"\"\n",
             "canonical_solution": "    return a + b\n", "entry_point": "add",
             "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n"}  # fmt: skip
MBPP = {"task_id": 11, "text": "Write a function to double a number.", "code": "...",
        "test_list": ["assert double(2) == 4", "assert double(0) == 0"]}  # fmt: skip


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def scores(tmp_path: Path, tasks: Path, completions: list[dict]) -> dict[str, list[float]]:
    done = write(tmp_path / "c.jsonl", completions)
    out = tmp_path / "s.jsonl"
    args = ["verify", "--tasks", str(tasks), "--completions", str(done), "--out", str(out)]
    result = subprocess.run([*RLV, *args], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    found: dict[str, dict[int, float]] = {}
    for line in out.read_text().splitlines():
        row = json.loads(line)
        assert row["status"] == "ok", row
        found.setdefault(row["task_id"], {})[row["sample_index"]] = row["reward"]
    return {task: [by_index[i] for i in sorted(by_index)] for task, by_index in found.items()}


def test_rows_become_tasks_of_our_verifiers(tmp_path: Path) -> None:
    path = write(
        tmp_path / "mixed.jsonl", [GSM8K, MATH500, HUMANEVAL, MBPP, {"id": "x", "prompt": "p"}]
    )
    tasks = load_tasks(path)
    assert list(tasks) == ["gsm8k-1", "test/prealgebra/1.json", "HumanEval/0", "mbpp-11", "x"]
    assert tasks["gsm8k-1"].reference == {"answer": "1198"} and tasks["gsm8k-1"].verifier == "math"
    assert tasks["test/prealgebra/1.json"].metadata == {"subject": "Prealgebra", "level": 1}
    assert tasks["HumanEval/0"].verifier == tasks["mbpp-11"].verifier == "pytest"
    assert "assert double(2) == 4" in str(tasks["mbpp-11"].prompt)
    assert tasks["x"].verifier is None


def test_gsm8k_and_math500_score_with_the_math_verifier(tmp_path: Path) -> None:
    tasks = write(tmp_path / "t.jsonl", [GSM8K, MATH500])
    found = scores(tmp_path, tasks, [
        {"task_id": "gsm8k-1", "completion": "So \\boxed{1198}."},
        {"task_id": "gsm8k-1", "completion": "So \\boxed{1200}."},
        {"task_id": "test/prealgebra/1.json", "completion": "\\boxed{0.75}"},
        {"task_id": "test/prealgebra/1.json", "completion": "\\boxed{\\frac{1}{2}}"},
    ])  # fmt: skip
    assert found == {"gsm8k-1": [1.0, 0.0], "test/prealgebra/1.json": [1.0, 0.0]}


@pytest.mark.requires("bwrap")
def test_humaneval_and_mbpp_score_with_the_pytest_verifier(tmp_path: Path) -> None:
    tasks = write(tmp_path / "t.jsonl", [HUMANEVAL, MBPP])
    found = scores(tmp_path, tasks, [
        {"task_id": "HumanEval/0", "completion": "```python\ndef add(a, b):\n  return a + b\n```"},
        {"task_id": "HumanEval/0", "completion": "```python\ndef add(a, b):\n  return a - b\n```"},
        {"task_id": "mbpp-11", "completion": "```python\ndef double(x):\n    return 2 * x\n```"},
        {"task_id": "mbpp-11", "completion": "```python\ndef double(x):\n    return x\n```"},
    ])  # fmt: skip
    assert found["HumanEval/0"][0] == 1.0 > found["HumanEval/0"][1]
    assert found["mbpp-11"][0] == 1.0 > found["mbpp-11"][1]
