"""`rlv verify` and the user's files: no input overwritten, nothing half-written, resumable."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rlv_cli_helpers import assert_user_error, io_args, rlv, write_jsonl
from rlv_fake_plugins import MakePlugin

SLOW_PLUGIN = """
import os, time
from rl_verifier import Verdict, Verifier, hookimpl

class Slow(Verifier):
    '''Reward is the completion as a number; 'hold' waits while $HOLD_FILE exists.'''
    name = "slow"
    default_timeout_s = 120.0
    def verify(self, task, completion):
        text = completion.text()
        if text == "hold":
            open(os.environ["HOLD_FILE"] + ".reached", "w").close()
        while text == "hold" and os.path.exists(os.environ["HOLD_FILE"]):
            time.sleep(0.05)
        return Verdict.ok(0.5 if text == "hold" else float(text))

@hookimpl
def register_verifiers(register):
    register(Slow)
"""


def rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def batch(tmp_path: Path) -> tuple[Path, Path]:
    tasks = write_jsonl(
        tmp_path / "tasks.jsonl",
        [{"id": "a", "prompt": "2+2", "verifier": "exact_match", "reference": {"answer": "4"}}],
    )
    completions = write_jsonl(
        tmp_path / "completions.jsonl",
        [{"task_id": "a", "completion": "<answer>4</answer>"}],
    )
    return tasks, completions


@pytest.mark.parametrize("which", ["tasks", "completions", "symlink", "dotted"])
def test_output_that_is_an_input_is_refused_before_any_work(
    tmp_path: Path, batch: tuple[Path, Path], which: str
) -> None:
    tasks, completions = batch
    before = completions.read_text()
    out = {
        "tasks": tasks,
        "completions": completions,
        "symlink": tmp_path / "link.jsonl",
        "dotted": tmp_path / "sub" / ".." / "completions.jsonl",
    }[which]
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.jsonl").symlink_to(completions)
    result = rlv("verify", *io_args(tasks, completions, out))
    assert_user_error(result, "is also an input")
    assert completions.read_text() == before
    assert not list(tmp_path.rglob("*.partial"))


@pytest.mark.parametrize("out", [".", "outdir"])
def test_output_that_is_a_directory_is_one_line_before_any_work(
    tmp_path: Path, batch: tuple[Path, Path], out: str
) -> None:
    tasks, completions = batch
    (tmp_path / "outdir").mkdir()
    result = rlv("verify", *io_args(tasks, completions, out), cwd=tmp_path)
    assert_user_error(result, "is a directory")
    assert not list(tmp_path.rglob("*.partial"))


def test_summary_json_may_not_overwrite_an_input(tmp_path: Path, batch: tuple[Path, Path]) -> None:
    tasks, completions = batch
    result = rlv(
        "verify", *io_args(tasks, completions, tmp_path / "s.jsonl"), "--summary-json", str(tasks)
    )
    assert_user_error(result, "--summary-json", "is also an input")


def interrupt_after_rows(
    command: list[str], partial: Path, count: int, env: dict[str, str], reached: Path
) -> subprocess.CompletedProcess[str]:
    """Start ``rlv``, send Ctrl-C (SIGINT to its process group) once ``count`` rows exist
    and the file ``reached`` does (a sample is being held)."""
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
        start_new_session=True,
        # as at a terminal: a test runner started in the background inherits SIGINT ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if (
            reached.exists()
            and partial.exists()
            and len(partial.read_text().splitlines()) >= count
        ):
            time.sleep(0.5)  # what finished before the held sample is written
            break
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def test_ctrl_c_keeps_finished_rows_and_resume_scores_only_the_rest(
    tmp_path: Path, make_plugin: MakePlugin
) -> None:
    site = make_plugin("slow", SLOW_PLUGIN)
    hold = tmp_path / "hold"
    hold.touch()  # the sixth sample waits until this file is gone: Ctrl-C lands mid-batch
    env = {"PYTHONPATH": str(site), "HOLD_FILE": str(hold)}
    tasks = write_jsonl(tmp_path / "t.jsonl", [{"id": "a", "prompt": "p", "verifier": "slow"}])
    values = [f"0.{i}" for i in range(5)] + ["hold"] + [f"0.{i}" for i in range(5, 10)]
    completions = write_jsonl(
        tmp_path / "c.jsonl", [{"task_id": "a", "completion": v} for v in values]
    )
    out = tmp_path / "scores.jsonl"
    partial = tmp_path / "scores.jsonl.partial"
    command = [
        sys.executable,
        "-m",
        "rl_verifier",
        "verify",
        *io_args(tasks, completions, out),
        "--workers",
        "1",
    ]
    reached = tmp_path / "hold.reached"
    result = interrupt_after_rows(command, partial, 1, env, reached)
    assert result.returncode != 0
    assert "--resume" in result.stderr and "Traceback" not in result.stderr
    kept = rows(partial)
    # One worker: only samples before the held one finished. Those sent to the worker in
    # the held sample's batch are answered with it, so they may be scored again on resume.
    assert 1 <= len(kept) <= 5
    assert all(int(str(r["sample_index"])) < 5 for r in kept)
    assert not out.exists()
    hold.unlink()

    again = rlv("verify", *io_args(tasks, completions, out), env=env)
    assert_user_error(again, "interrupted run", "--resume")

    resumed = rlv("verify", *io_args(tasks, completions, out), "--resume", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming: {len(kept)} rows kept" in resumed.stderr
    final = rows(out)
    assert sorted(r["sample_index"] for r in final) == list(range(len(values)))  # type: ignore[type-var]
    assert {r["sample_index"]: r["reward"] for r in final} == {
        i: 0.5 if v == "hold" else float(v) for i, v in enumerate(values)
    }
    assert final[: len(kept)] == kept  # finished rows were not scored again
    assert not partial.exists()


def test_resume_drops_rows_scored_with_other_settings(
    tmp_path: Path, batch: tuple[Path, Path]
) -> None:
    tasks, completions = batch
    out = tmp_path / "scores.jsonl"
    first = rlv(
        "verify", *io_args(tasks, completions, out), "--config", "exact_match.normalise=false"
    )
    assert first.returncode == 0, first.stderr
    stale = rows(out)
    (tmp_path / "scores.jsonl.partial").write_text(out.read_text() + '{"task_id": "a", "sam')
    out.unlink()
    resumed = rlv("verify", *io_args(tasks, completions, out), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "0 rows kept" in resumed.stderr and "1 dropped" in resumed.stderr
    [row] = rows(out)
    assert row["verifier"]["config_hash"] != stale[0]["verifier"]["config_hash"]  # type: ignore[index]


def test_pipes_tasks_from_stdin_and_scores_to_stdout(batch: tuple[Path, Path]) -> None:
    tasks, completions = batch
    result = subprocess.run(
        [sys.executable, "-m", "rl_verifier", "verify", *io_args("-", completions, "-")],
        input=tasks.read_text(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    [row] = [json.loads(line) for line in result.stdout.splitlines()]
    assert row["reward"] == 1.0 and row["status"] == "ok"
    assert "mean reward" in result.stderr  # the summary stays out of the data stream


def test_numeric_ids_and_extra_columns_load_and_can_be_kept(tmp_path: Path) -> None:
    tasks = write_jsonl(
        tmp_path / "t.jsonl",
        [
            {
                "id": 17,
                "prompt": "2+2",
                "verifier": "exact_match",
                "reference": {"answer": "4"},
                "source": "dump-v2",
            }
        ],
    )
    completions = write_jsonl(
        tmp_path / "c.jsonl",
        [{"task_id": 17, "completion": "<answer>4</answer>", "model": "m1", "temperature": 0.7}],
    )
    out = tmp_path / "s.jsonl"
    plain = rlv("verify", *io_args(tasks, completions, out))
    assert plain.returncode == 0, plain.stderr
    [row] = rows(out)
    assert row["task_id"] == "17" and row["reward"] == 1.0
    assert "columns" not in row["info"]  # type: ignore[operator]
    out.unlink()
    kept = rlv("verify", *io_args(tasks, completions, out), "--keep-columns")
    assert kept.returncode == 0, kept.stderr
    [row] = rows(out)
    assert row["info"]["columns"] == {"model": "m1", "temperature": 0.7}  # type: ignore[index]


def test_tasks_from_a_registered_task_set(tmp_path: Path) -> None:
    from rl_verifier.discovery.plugins import get_plugins

    [task, *_] = get_plugins().task_sets["exact_match-example"].value()
    answer = task.reference.get("answer") or task.reference["answers"][0]
    completions = write_jsonl(
        tmp_path / "c.jsonl", [{"task_id": task.id, "completion": f"<answer>{answer}</answer>"}]
    )
    out = tmp_path / "s.jsonl"
    source = "taskset:exact_match-example"
    result = rlv("verify", "--verifier", "exact_match", *io_args(source, completions, out))
    assert result.returncode == 0, result.stderr
    assert rows(out)[0]["reward"] == 1.0
    assert_user_error(
        rlv("verify", *io_args("taskset:nope", completions, out)),
        "unknown task set 'nope'",
        "exact_match-example",
    )


def test_verifier_of_a_plugin_that_failed_to_load_says_why(
    tmp_path: Path, batch: tuple[Path, Path], make_plugin: MakePlugin
) -> None:
    tasks, completions = batch
    site = make_plugin("broken", "import no_such_module_here\n")
    result = rlv(
        "verify",
        "--verifier",
        "broken",
        *io_args(tasks, completions, tmp_path / "s.jsonl"),
        env={"PYTHONPATH": str(site)},
    )
    assert_user_error(result, "plugin 'broken' failed to load", "no_such_module_here")


def test_resume_scores_again_every_row_a_fresh_score_could_not_be(tmp_path: Path) -> None:
    """Hand-edited rows of OUT.partial (a reward outside the range, NaN, a reward as text,
    an unknown status, a reward the status rules out) are dropped and scored again, the
    first named by file and line; an intact row is kept."""
    answers = [str(i % 2) for i in range(7)]
    tasks = write_jsonl(
        tmp_path / "tasks.jsonl",
        [{"id": f"t{i}", "prompt": "p", "reference": {"answer": "1"}} for i in range(7)],
    )
    completions = write_jsonl(
        tmp_path / "completions.jsonl",
        [{"task_id": f"t{i}", "completion": a} for i, a in enumerate(answers)],
    )
    out = tmp_path / "scores.jsonl"
    args = ["verify", "--verifier", "exact_match", *io_args(tasks, completions, out)]
    first = rlv(*args)
    assert first.returncode == 0, first.stderr
    fresh = {r["task_id"]: r for r in rows(out)}
    edits: list[dict[str, object]] = [
        {"reward": 99},
        {"reward": float("nan")},
        {"reward": "1"},
        {"status": "great"},
        {"status": "error", "reward": 1.0},
        {"status": "invalid", "reward": 1.0},  # exact_match's invalid penalty is 0
        {},  # intact: kept
    ]
    lines = [json.dumps({**fresh[f"t{i}"], **edit}) for i, edit in enumerate(edits)]
    (tmp_path / "scores.jsonl.partial").write_text("\n".join(lines) + "\n")
    out.unlink()
    resumed = rlv(*args, "--resume")
    assert resumed.returncode == 0 and "Traceback" not in resumed.stderr, resumed.stderr
    assert "1 rows kept" in resumed.stderr and "6 to score, 6 dropped" in resumed.stderr
    assert f"{out}.partial:1: reward 99.0 outside its declared range" in resumed.stderr
    again = {r["task_id"]: r for r in rows(out)}
    assert {t: (r["reward"], r["status"]) for t, r in again.items()} == {
        t: (r["reward"], r["status"]) for t, r in fresh.items()
    }
    assert again["t6"] == fresh["t6"]  # the intact row was not scored again
    assert "mean reward (judged)   0.4286" in resumed.stdout  # 3 of 7


def test_a_partial_row_naming_no_sample_stops_resume_in_one_line(
    tmp_path: Path, batch: tuple[Path, Path]
) -> None:
    tasks, completions = batch
    out = tmp_path / "scores.jsonl"
    (tmp_path / "scores.jsonl.partial").write_text('{"task_id": "a"}\n{"reward": 1}\n')
    resumed = rlv("verify", *io_args(tasks, completions, out), "--resume")
    assert_user_error(resumed, "scores.jsonl.partial:1: not a row this command wrote")
