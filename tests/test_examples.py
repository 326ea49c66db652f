"""The recipes under examples/ run: each trains two steps on the local backend as its README
says (`rlv train examples/NAME/NAME.toml`), with a short warm start where it has one.

The tool recipe's scripted warm-up is checked too: its episodes replay through the real
search environment, and they teach the format only (half cite a returned document, half
search over the budget), so what RL improves is learned from the reward.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from statistics import fmean
from typing import Any

import pytest

from rl_verifier import Task
from rl_verifier.testing import score_once

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
LEAN = EXAMPLES / "lean"
TOOLS = EXAMPLES / "tools"
CALIBRATION = EXAMPLES / "calibration"
RLV = [sys.executable, "-c", "from rl_verifier.cli.app import main; main()"]
SMALL = ["groups_per_step=2", "group_size=4", "save_every=1"]


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def need_smollm2() -> None:
    """Skip unless SmolLM2-135M-Instruct's wheel is installed."""
    from rl_verifier_server.models import smollm2

    if not smollm2.is_available():
        pytest.skip(f"needs the wheel: {smollm2.INSTALL_HINT}")


def first_rows(source: Path, count: int, target: Path) -> Path:
    """``target`` holding the first ``count`` rows of ``source`` (a few held-out tasks)."""
    target.write_text("".join(json.dumps(row) + "\n" for row in rows(source)[:count]))
    return target


def train_two_steps(config: Path, run_dir: Path, *overrides: str) -> list[dict[str, Any]]:
    """``rlv train CONFIG`` for two RL steps (and two warm-up steps); the metrics rows."""
    sets = [f"run_dir={run_dir}", "steps=2", *SMALL, *overrides]
    result = subprocess.run(
        [*RLV, "train", str(config), *(a for s in sets for a in ("--set", s))],
        cwd=run_dir.parent,
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if not k.startswith("TINKER_")},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = rows(run_dir / "metrics.jsonl")
    assert [m["step"] for m in metrics if m["phase"] == "rl"] == [0, 1]
    assert (run_dir / "report.html").exists()
    return metrics


@pytest.mark.slow
def test_tool_recipe_trains_smollm2_two_steps(tmp_path: Path) -> None:
    """SmolLM2 warm-started on one step of scripted episodes, two RL steps in the search
    environment, held-out evals (two held-out questions) before and after."""
    need_smollm2()
    few = first_rows(TOOLS / "heldout.jsonl", 2, tmp_path / "few.jsonl")
    sets = ["warmup_steps=1", "eval_every=2", f"eval_tasks={few}", "eval_n=1"]
    metrics = train_two_steps(TOOLS / "tools.toml", tmp_path / "run", *sets)
    warmup = [m for m in metrics if m["phase"] == "warmup"]
    assert [m["step"] for m in warmup] == [-1]
    assert all(0 < m["loss"] < 20 for m in warmup)  # multi-turn episodes replayed and trained
    for row in (m for m in metrics if m["phase"] == "rl"):
        assert sum(row["status"].values()) == 8
        assert row["turns_mean"] >= 1
        if row["status"]["ok"]:
            assert {"citation_validity", "calls", "thrift"} <= set(row["components"])
    evals = [m for m in metrics if m["phase"] == "eval"]
    assert [m.get("stage") for m in evals] == ["base", "warm_start", "rl"]
    assert all(m["eval"]["samples"] == 2 for m in evals)


@pytest.mark.slow
def test_math_recipe_trains_two_steps(tmp_path: Path) -> None:
    metrics = train_two_steps(EXAMPLES / "math" / "math.toml", tmp_path / "run", "warmup_steps=2")
    assert [m["phase"] for m in metrics] == ["warmup", "warmup", "rl", "rl"]


@pytest.mark.slow
def test_calibration_recipe_the_demo_trains_two_steps(tmp_path: Path) -> None:
    metrics = train_two_steps(EXAMPLES / "demo" / "demo.toml", tmp_path / "run", "warmup_steps=2")
    assert all(m["status"]["error"] == 0 for m in metrics if m["phase"] == "rl")


@pytest.mark.slow
def test_calibration_recipe_trains_smollm2_two_steps_with_held_out_evals(
    tmp_path: Path,
) -> None:
    """The Mantic recipe (and `make demo`): SmolLM2, one warm-up step, two RL steps, the
    base model's, the warm start's and the trained policy's held-out evals (four held-out
    questions, one sample each)."""
    need_smollm2()
    few = first_rows(CALIBRATION / "heldout.jsonl", 4, tmp_path / "few.jsonl")
    sets = ["warmup_steps=1", "eval_every=2", f"eval_tasks={few}", "eval_n=1"]
    metrics = train_two_steps(CALIBRATION / "calibration.toml", tmp_path / "run", *sets)
    evals = [m for m in metrics if m["phase"] == "eval"]
    assert [m.get("stage") for m in evals] == ["base", "warm_start", "rl"]
    for row in evals:
        assert row["eval"]["samples"] == 4 and row["eval"]["status"].get("error", 0) == 0
    assert all(m["status"]["error"] == 0 for m in metrics if m["phase"] == "rl")


def test_calibration_files_are_what_make_calibration_writes(tmp_path: Path) -> None:
    """The held-out questions are about entities never trained on; each split resolves
    exactly at its stated rates; the files are make_calibration.py's output."""
    spec = importlib.util.spec_from_file_location(
        "make_calibration", CALIBRATION / "make_calibration.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.HERE = tmp_path
    module.main()
    for name in ("train.jsonl", "heldout.jsonl", "warmup.jsonl"):
        assert (tmp_path / name).read_text() == (CALIBRATION / name).read_text(), name
    train, held = rows(CALIBRATION / "train.jsonl"), rows(CALIBRATION / "heldout.jsonl")
    assert (len(train), len(held)) == (480, 160)
    assert not {r["metadata"]["entity"] for r in train} & {r["metadata"]["entity"] for r in held}
    assert not {json.dumps(r["prompt"]) for r in train} & {json.dumps(r["prompt"]) for r in held}
    for split in (train, held):
        for rate in (0.9, 0.1):
            outcomes = [r["reference"]["outcome"] for r in split if r["metadata"]["rate"] == rate]
            assert fmean(outcomes) == pytest.approx(rate, abs=0.01)  # exact shares, rounded


@pytest.mark.slow
def test_arithmetic_recipe_trains_smollm2_two_steps_with_held_out_evals(tmp_path: Path) -> None:
    """The real-model recipe: SmolLM2-135M-Instruct, two RL steps, the base model's and the
    trained policy's held-out evals (on two of its held-out questions, one sample each)."""
    need_smollm2()
    held_out = rows(EXAMPLES / "arithmetic" / "heldout.jsonl")
    train_ids = {row["id"] for row in rows(EXAMPLES / "arithmetic" / "tasks.jsonl")}
    assert not train_ids & {row["id"] for row in held_out}
    questions = {row["prompt"] for row in rows(EXAMPLES / "arithmetic" / "tasks.jsonl")}
    assert not questions & {row["prompt"] for row in held_out}  # no question in both
    few = first_rows(EXAMPLES / "arithmetic" / "heldout.jsonl", 2, tmp_path / "few.jsonl")
    sets = ["eval_every=2", f"eval_tasks={few}", "eval_n=1", "max_tokens=8"]
    metrics = train_two_steps(EXAMPLES / "arithmetic" / "arithmetic.toml", tmp_path / "run", *sets)
    evals = [m for m in metrics if m["phase"] == "eval"]
    assert [m["trained_steps"] for m in evals] == [0, 2]
    for row in evals:
        assert row["eval"]["samples"] == 2
        assert 0 <= row["eval"]["mean_reward"]["mean"] <= 1


def lean_missing() -> str | None:
    """Why the Lean recipe cannot run here (no Lean REPL, as `rlv lean doctor` finds one: the
    repository's conftest points RLV_LEAN_REPL at ../shared/lean4-2021 where it exists)."""
    from rl_verifier_lean.config import LeanConfig
    from rl_verifier_lean.locate import LeanMissing, repl_launch

    try:
        repl_launch(LeanConfig(), sandboxed=False)
    except LeanMissing:
        return "no Lean REPL here: set RLV_LEAN_REPL or RLV_LEAN_PROJECT (see `rlv lean doctor`)"
    return None


LEAN_MISSING = lean_missing()


@pytest.mark.slow
@pytest.mark.skipif(LEAN_MISSING is not None, reason=LEAN_MISSING or "")
def test_lean_recipe_trains_smollm2_two_steps_against_the_kernel(tmp_path: Path) -> None:
    """SmolLM2 warm-started on the format (one step), two RL steps scored by the real kernel,
    held-out evals before and after (two held-out theorems, one sample each)."""
    need_smollm2()
    few = first_rows(LEAN / "heldout.jsonl", 2, tmp_path / "few.jsonl")
    sets = ["warmup_steps=1", "eval_every=2", f"eval_tasks={few}", "eval_n=1"]
    metrics = train_two_steps(LEAN / "lean.toml", tmp_path / "run", *sets)
    assert [m["phase"] for m in metrics if m["phase"] != "eval"] == ["warmup", "rl", "rl"]
    evals = [m for m in metrics if m["phase"] == "eval"]
    assert evals[0]["trained_steps"] == 0 and evals[-1]["trained_steps"] == 2
    for row in (m for m in metrics if m["phase"] == "rl"):  # the kernel judged every sample
        assert row["status"]["ok"] + row["status"]["invalid"] == 8, row["status"]
    for row in evals:
        assert row["eval"]["samples"] == 2 and row["eval"]["status"].get("error", 0) == 0


def make_lean() -> Any:
    """examples/lean/make_lean.py as a module."""
    spec = importlib.util.spec_from_file_location("make_lean", LEAN / "make_lean.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lean_task_files_are_what_make_lean_writes() -> None:
    maker = make_lean()
    built = maker.build()
    assert rows(LEAN / "tasks.jsonl") == built["train"]
    assert rows(LEAN / "heldout.jsonl") == built["heldout"]
    assert rows(LEAN / "warmup.jsonl") == maker.warmup(built["train"])


def test_lean_held_out_theorems_are_never_trained_on() -> None:
    train, held_out = rows(LEAN / "tasks.jsonl"), rows(LEAN / "heldout.jsonl")
    assert (len(train), len(held_out)) == (204, 60)

    def bodies(split: list[dict[str, Any]]) -> set[str]:  # the statement after its name
        return {r["reference"]["statement"].split(" ", 2)[2] for r in split}

    assert not bodies(train) & bodies(held_out)
    assert not {r["prompt"] for r in train} & {r["prompt"] for r in held_out}
    shapes = {r["metadata"]["shape"] for r in train}
    for split in (train, held_out):  # every shape equally often
        counts = [sum(r["metadata"]["shape"] == s for r in split) for s in shapes]
        assert len(set(counts)) == 1, counts


def test_lean_warmup_is_a_noisy_lesson_in_which_form_fits() -> None:
    """Each training task once: its known proof about half the time, else a form drawn
    whatever its shape, so every shape also sees wrong forms and RL has the rest to learn."""
    maker = make_lean()
    tasks = {r["id"]: r for r in rows(LEAN / "tasks.jsonl")}
    warmup = rows(LEAN / "warmup.jsonl")
    assert sorted(r["task_id"] for r in warmup) == sorted(tasks)
    forms = {r["completion"] for r in warmup}
    assert forms == {f"```lean\n{form}\n```" for form in maker.FORMS}
    fits = [r["completion"] == f"```lean\n{tasks[r['task_id']]['metadata']['known_proof']}\n```"
            for r in warmup]  # fmt: skip
    expected = maker.KNOWN_SHARE + (1 - maker.KNOWN_SHARE) / len(maker.FORMS)
    assert abs(fmean(fits) - expected) < 0.1
    for shape in {t["metadata"]["shape"] for t in tasks.values()}:
        rows_of_shape = [r for r in warmup if tasks[r["task_id"]]["metadata"]["shape"] == shape]
        seen = {r["completion"] for r in rows_of_shape}
        assert len(seen) >= 3, (shape, seen)


@pytest.mark.slow
def test_a_script_the_environment_ends_early_stops_the_run_in_one_line(tmp_path: Path) -> None:
    # The first reply makes no call, so search_tools ends the episode after it: the row's
    # second turn can never be trained in context.
    row = {"task_id": "fictopedia-002", "completion": [
        {"role": "assistant", "content": "No search needed."},
        {"role": "assistant", "content": "[fx-001]"},
    ]}  # fmt: skip
    (tmp_path / "warm.jsonl").write_text(json.dumps(row) + "\n")
    sets = [f"run_dir={tmp_path / 'run'}", f"warmup_examples={tmp_path / 'warm.jsonl'}"]
    sets += ["warmup_steps=1", "steps=1", "base_model=rlv/tiny-chat", "eval_every=0"]
    result = subprocess.run(
        [
            *RLV,
            "train",
            str(EXAMPLES / "tools" / "tools.toml"),
            *(a for s in sets for a in ("--set", s)),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.startswith("rlv: error")]
    assert lines == [
        "rlv: error: warm-up example of task 'fictopedia-002': the environment ended the episode "
        "after 1 of its 2 assistant turns"
    ], result.stderr[-2000:]


# ------------------------------------------------------------------------------------------
# The tool recipe's scripted warm-up


def replayed(task: Task, replies: list[str]) -> list[dict[str, Any]]:
    """The episode the scripted replies make in the search environment (what the warm start
    trains on): the replies, and the tool results the environment gives between them."""
    from rl_verifier.train import TOOL_RECORD_KEY
    from rl_verifier_search_env.corpus import load_index
    from rl_verifier_search_env.env import SearchTools

    env = SearchTools(load_index(), max_turns=len(replies))
    messages = env.start(task)
    for number, reply in enumerate(replies, start=1):
        messages.append({"role": "assistant", "content": reply})
        new = env.respond(task, messages, reply) if number < len(replies) else None
        assert (new is None) == (number == len(replies)), "the script and the environment agree"
        for message in new or []:
            message.pop(TOOL_RECORD_KEY, None)
            messages.append(message)
    return messages[len(env.start(task)) :]


def test_tool_warmup_is_one_search_an_answer_and_its_citation() -> None:
    """Every scripted episode searches the entity's name once (the budget), answers from the
    document that comes back and cites it: each scores the whole reward when replayed
    through the environment."""
    from rl_verifier_tool_calls import ToolCallsVerifier

    tasks = {t["id"]: Task.model_validate(t) for t in rows(TOOLS / "tasks.jsonl")}
    config = {"max_calls": 1, "target_calls": 1}
    pairs = []
    for row in rows(TOOLS / "warmup.jsonl"):
        replies = [m["content"] for m in row["completion"] if m["role"] == "assistant"]
        pairs.append((tasks[row["task_id"]], replayed(tasks[row["task_id"]], replies)))
    assert len(pairs) == len(tasks) == 151
    scores = score_once(ToolCallsVerifier(config), pairs)
    components = {k: fmean(s.components[k] for s in scores) for k in scores[0].components}
    assert components["legality"] == 1.0  # every scripted call is legal
    assert components["answer"] == 1.0  # read out of the returned document
    assert components["citation_validity"] == 1.0  # the document returned is cited
    assert components["calls"] == 1.0  # one search each, the budget
    assert components["thrift"] == 1.0
    assert all(s.reward == 1.0 for s in scores)


def test_tool_held_out_entities_are_never_trained_on() -> None:
    """No held-out question, entity or supporting document occurs in training or warm-up."""
    train = rows(TOOLS / "tasks.jsonl")
    held = rows(TOOLS / "heldout.jsonl")
    assert (len(train), len(held)) == (151, 49)
    assert not {r["prompt"] for r in train} & {r["prompt"] for r in held}
    assert not {r["metadata"]["entity"] for r in train} & {r["metadata"]["entity"] for r in held}
    held_docs = {doc for r in held for doc in r["reference"]["support"]}
    warm_text = (TOOLS / "warmup.jsonl").read_text()
    assert not any(f"[{doc}]" in warm_text for doc in held_docs)
    assert {r["metadata"]["kind"] for r in held} == {r["metadata"]["kind"] for r in train}


def test_judge_rank_recipe_is_a_valid_run_with_a_held_out_split(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its files only (a run needs a second SmolLM2 as judge: minutes, measured in its
    README): held-out questions never trained on, the TOML a valid run, its judge settings
    valid for judge_rank and pointed at the judge server with_judge.py starts."""
    from rl_verifier.train.config import TrainConfig
    from rl_verifier_judge import JudgeRankVerifier

    folder = EXAMPLES / "judge_rank"
    train, held_out = rows(folder / "tasks.jsonl"), rows(folder / "heldout.jsonl")
    assert not {r["prompt"] for r in train} & {r["prompt"] for r in held_out}
    config = TrainConfig.model_validate(tomllib.loads((folder / "judge_rank.toml").read_text()))
    assert config.reward == "judge_rank" and config.eval_n >= 2  # a held-out group is ranked
    monkeypatch.setenv("RLV_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    judge = JudgeRankVerifier(config.verifier_config)
    assert judge.config.format == "logprobs" and judge.config.base_url == "http://127.0.0.1:9/v1"


def test_tool_choice_held_out_phrasings_are_never_trained_on() -> None:
    folder = EXAMPLES / "tool_choice"
    train, held_out = rows(folder / "tasks.jsonl"), rows(folder / "heldout.jsonl")
    assert not {r["metadata"]["phrasing"] for r in train} & {
        r["metadata"]["phrasing"] for r in held_out
    }
    for split in (train, held_out):  # each tool a quarter: one constant answer scores 0.25
        answers = [r["reference"]["answer"] for r in split]
        assert {answers.count(tool) for tool in set(answers)} == {len(split) // 4}


def test_tool_choice_reward_reads_the_first_tool_named() -> None:
    from rl_verifier.builtin.plugin import ExactMatch

    config = tomllib.loads((EXAMPLES / "tool_choice" / "tool_choice.toml").read_text())
    task = Task.model_validate(rows(EXAMPLES / "tool_choice" / "heldout.jsonl")[0])
    gold = task.reference["answer"]
    other = next(t for t in ("calculator", "weather", "translator", "calendar") if t != gold)
    replies = {
        f"{gold.title()}.": 1.0,
        f"The {gold} tool handles it.": 1.0,
        f"{other}, then {gold}": 0.0,  # the first tool named is the answer
        "I would ask a friend.": None,  # names no tool: invalid
    }
    scores = score_once(ExactMatch(config["verifier_config"]), [
        (task, reply) for reply in replies
    ])  # fmt: skip
    for (reply, expected), score in zip(replies.items(), scores, strict=True):
        if expected is None:
            assert score.status == "invalid", reply
        else:
            assert (score.status, score.reward) == ("ok", expected), reply
