"""`rlv eval` end to end against `rlv serve` with the built-in tiny model: the documented
example, resume after deleted rows and after kill -9, re-scoring and comparing."""

from __future__ import annotations

import json
import random
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rl_verifier.evaluation.estimators import pass_at_k

ROOT = Path(__file__).resolve().parents[1]
RLV = [sys.executable, "-c", "from rl_verifier.cli.app import main; main()"]


def rlv(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RLV, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def doc_blocks() -> tuple[str, list[str], list[str]]:
    """docs/eval.md's worked example: the tasks file, the command, its printed output."""
    text = (ROOT / "docs" / "eval.md").read_text().split("## Worked example", 1)[1]
    tasks = re.search(r"```jsonl\n(.*?)```", text, re.S)
    command = re.search(r"```sh\n(rlv eval --model .*?)```", text, re.S)
    assert tasks and command, "docs/eval.md lost its worked example"
    output = re.search(r"```text\n(.*?)```", text[command.end() :], re.S)
    assert output
    args = shlex.split(command.group(1).replace("\\\n", " "))
    return tasks.group(1), args[1:], output.group(1).splitlines()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documented eval, run once: its folder."""
    work = tmp_path_factory.mktemp("eval")
    tasks, args, _ = doc_blocks()
    (work / "letters.jsonl").write_text(tasks)
    result = rlv(*args, cwd=work)
    assert result.returncode == 0, result.stderr[-3000:]
    (work / "stdout.txt").write_text(result.stdout)
    return work / "evals" / "base"


@pytest.mark.slow
def test_the_documented_example_prints_what_the_docs_say(base: Path) -> None:
    _, _, expected = doc_blocks()
    printed = (base.parent.parent / "stdout.txt").read_text().splitlines()
    steady = [line for line in printed if not line.startswith("wall time")]
    assert steady == [line for line in expected if not line.startswith("wall time")]


def test_summary_agrees_with_the_samples_it_was_made_from(base: Path) -> None:
    samples = rows(base / "samples.jsonl")
    settings = json.loads((base / "eval.json").read_text())
    assert settings["sampling"] == {
        "max_tokens": 6, "temperature": 1.0, "top_p": 1.0, "seed": 0, "max_context": 4096
    }  # fmt: skip
    keys = [(r["task_id"], r["sample_index"]) for r in samples]
    assert sorted(keys) == sorted((t, i) for t in ("common", "rare", "never") for i in range(4))
    summary = json.loads((base / "summary.json").read_text())
    for task in summary["per_task"]:
        mine = [r for r in samples if r["task_id"] == task["task_id"]]
        correct = sum(r["score"]["reward"] >= 1.0 for r in mine if r["score"]["status"] == "ok")
        assert task["correct"] == correct
        for k, value in task["pass_at_k"].items():
            assert value == pytest.approx(pass_at_k(len(mine), correct, int(k)))
        assert task["tokens"] == sum(r["tokens"] for r in mine) > 0
    assert summary["overall"]["status"]["ok"] == 12
    assert (base / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "pass@4" in (base / "report.html").read_text()


@pytest.mark.slow
def test_resume_redraws_exactly_the_missing_samples(base: Path, tmp_path: Path) -> None:
    """Same seed, same samples: rows removed from the file come back identical, and a
    larger -n adds only the new indices."""
    copy = tmp_path / "base"
    copy.mkdir()
    for name in ("eval.json", "samples.jsonl"):
        (copy / name).write_text((base / name).read_text())
    before = rows(base / "samples.jsonl")
    kept, dropped = before[:7], before[7:]
    lines = [json.dumps(r) for r in kept]
    (copy / "samples.jsonl").write_text("\n".join(lines) + "\n" + '{"task_id": "com')  # torn
    _, args, _ = doc_blocks()
    args[args.index("--out") + 1] = str(copy)
    args[args.index("-n") + 1] = "5"
    result = rlv(*args, "--resume", cwd=base.parent.parent)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "7 of 15 samples done" in result.stderr
    after = {(r["task_id"], r["sample_index"]): r for r in rows(copy / "samples.jsonl")}
    assert len(after) == len(rows(copy / "samples.jsonl")) == 15
    assert sorted(after) == sorted((t, i) for t in ("common", "rare", "never") for i in range(5))
    for row in kept:
        assert after[(row["task_id"], row["sample_index"])] == row
    for row in dropped:
        again = after[(row["task_id"], row["sample_index"])]
        assert (again["completion"], again["seed"]) == (row["completion"], row["seed"])
    summary = json.loads((copy / "summary.json").read_text())
    assert summary["overall"]["samples"] == 15 and summary["settings"]["n"] == 5
    changed = rlv(*args, "--resume", "--seed", "1", cwd=base.parent.parent)
    assert changed.returncode == 2 and "was run with sampling=" in changed.stderr


def resumable_copy(base: Path, folder: Path, lines: list[str]) -> list[str]:
    """A copy of the documented eval with ``lines`` as its samples, and the args resuming it."""
    folder.mkdir()
    (folder / "eval.json").write_text((base / "eval.json").read_text())
    (folder / "samples.jsonl").write_text("\n".join(lines) + "\n")
    _, args, _ = doc_blocks()
    args[args.index("--out") + 1] = str(folder)
    return [*args, "--resume"]


@pytest.mark.slow
def test_resume_samples_again_every_row_a_fresh_score_could_not_be(
    base: Path, tmp_path: Path
) -> None:
    """Hand-edited scores (a reward outside the range, NaN, a reward as text, an unknown
    status, a reward its status rules out, another config hash) are dropped, the first
    named by file and line, and drawn and scored again: the same rows and figures as the
    uninterrupted eval, never a traceback or a mean outside [0, 1]."""
    before = rows(base / "samples.jsonl")
    edits: list[dict[str, object]] = [
        {"reward": 99},
        {"reward": float("nan")},
        {"reward": "1"},
        {"status": "great"},
        {"status": "error", "reward": 1.0},
        {"verifier": {**before[6]["score"]["verifier"], "config_hash": "0123456789abcdef"}},
    ]
    lines = [json.dumps(row) for row in before]
    for line, edit in enumerate(edits, start=1):
        lines[line] = json.dumps({**before[line], "score": {**before[line]["score"], **edit}})
    folder = tmp_path / "edited"
    result = rlv(*resumable_copy(base, folder, lines), cwd=base.parent.parent)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "6 of 12 samples done" in result.stderr
    assert f"{folder}/samples.jsonl:2: reward 99.0 outside its declared range" in result.stderr
    assert "(the first of 6 rows dropped;" in result.stderr

    def steady(row: dict) -> tuple:
        score = {k: v for k, v in row["score"].items() if k != "elapsed_s"}
        return row["task_id"], row["sample_index"], row["seed"], json.dumps(row["completion"]), (
            json.dumps(score, sort_keys=True)
        )

    assert sorted(map(steady, rows(folder / "samples.jsonl"))) == sorted(map(steady, before))
    summary = json.loads((folder / "summary.json").read_text())["overall"]
    first = json.loads((base / "summary.json").read_text())["overall"]
    assert summary["mean_reward"] == first["mean_reward"]
    assert summary["status"] == first["status"] == {"ok": 12, "invalid": 0, "timeout": 0,
                                                    "error": 0}  # fmt: skip


def test_resume_stops_in_one_line_on_a_row_naming_no_sample(base: Path, tmp_path: Path) -> None:
    lines = [json.dumps(row) for row in rows(base / "samples.jsonl")]
    lines[3] = json.dumps({**json.loads(lines[3]), "completion": 7})
    folder = tmp_path / "broken"
    result = rlv(*resumable_copy(base, folder, lines), cwd=base.parent.parent)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    [line] = [line for line in result.stderr.splitlines() if line.strip()]
    assert f"{folder}/samples.jsonl:4: not an eval sample row: field 'completion'" in line


def test_rescore_and_compare(base: Path, tmp_path: Path) -> None:
    out = tmp_path / "rescored"
    result = rlv("eval", "--rescore", str(base / "samples.jsonl"), "--reward", "format",
                 "--out", str(out), cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rescored = rows(out / "samples.jsonl")
    assert {r["score"]["verifier"]["name"] for r in rescored} == {"format"}
    assert [r["completion"] for r in rescored] == [
        r["completion"] for r in rows(base / "samples.jsonl")
    ]
    compared = rlv("eval", "compare", str(base), str(out), "--json", cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    results = json.loads(compared.stdout)
    assert [r["metric"] for r in results] == ["mean_reward", "pass@1", "pass@2", "pass@4"]
    for r in results:
        d = r["difference"]
        holds_zero = d["low"] <= 0 <= d["high"]
        assert r["significant"] is not holds_zero
        assert d["mean"] == pytest.approx(r["b"] - r["a"])
    text = rlv("eval", "compare", str(base), str(out), cwd=tmp_path).stdout
    assert text.count("not significant") == sum(not r["significant"] for r in results)


def test_bad_inputs_fail_in_one_line_before_anything(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"id": "a", "prompt": "x"}\n{"id": "b", "prompt": 3, "verifier": "exact_match"}\n'
    )
    result = rlv(
        "eval", "--model", "rlv/tiny-chat", "--tasks", str(bad), "--out", "o", cwd=tmp_path
    )
    assert result.returncode == 2 and f"{bad}:2:" in result.stderr
    tasks = tmp_path / "t.jsonl"
    tasks.write_text('{"id": "a", "prompt": "x", "verifier": "exact_match"}\n')
    cases = [
        (["-n", "2", "-k", "3"], "each k must be between 1 and -n (2)"),
        (["--reward", "nope"], "nope"),
        (["--model", "no/such-model"], "not available to the local server"),
    ]
    for extra, message in cases:
        args = ["eval", "--model", "rlv/tiny-chat", "--tasks", str(tasks), "--out", "o", *extra]
        result = rlv(*args, cwd=tmp_path)
        assert result.returncode == 2 and message in result.stderr, (extra, result.stderr)
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_kill_9_at_a_random_point_then_resume(tmp_path: Path) -> None:
    tasks = tmp_path / "t.jsonl"
    tasks.write_text("".join(
        json.dumps({"id": f"t{i}", "prompt": f"Say {i}.", "reference": {"answer": "s"},
                    "verifier": "exact_match"}) + "\n" for i in range(3)
    ))  # fmt: skip
    out = tmp_path / "ev"
    args = ["eval", "--model", "rlv/tiny-chat", "--tasks", str(tasks), "-n", "4",
            "--max-tokens", "4", "--out", str(out)]  # fmt: skip
    point = random.randint(0, 11)  # rows written before the kill
    child = subprocess.Popen([*RLV, *args], cwd=tmp_path, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)  # fmt: skip
    samples = out / "samples.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        written = samples.read_text().count("\n") if samples.exists() else 0
        if (out / "eval.json").exists() and written >= point:
            break
        assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert not (out / "summary.json").exists(), f"finished before the kill at {point}"
    result = rlv(*args, "--resume", cwd=tmp_path)
    assert result.returncode == 0, (point, result.stderr[-3000:])
    keys = [(r["task_id"], r["sample_index"]) for r in rows(samples)]
    assert sorted(keys) == sorted((f"t{t}", i) for t in range(3) for i in range(4)), point
    assert json.loads((out / "summary.json").read_text())["overall"]["samples"] == 12


def test_every_option_of_rlv_eval_is_documented() -> None:
    import click

    from rl_verifier.cli.eval import compare_command, eval_command

    text = (ROOT / "docs" / "eval.md").read_text()
    for command in (eval_command, compare_command):
        for param in command.params:
            if isinstance(param, click.Option):
                for opt in param.opts:
                    assert re.search(rf"`{re.escape(opt)}[ `]", text), f"{opt} not in eval.md"
