"""`rlv train` end to end on the local backend (rlv serve with the built-in tiny model)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rl_verifier.builtin.plugin import arithmetic_tasks
from rl_verifier.train.rollouts import tasks_for_step
from rl_verifier.train.script_writer import BuildRequest, write_loop

RLV = [sys.executable, "-c", "from rl_verifier.cli.app import main; main()"]


def rlv(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*RLV, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def small_config(path: Path, **settings: object) -> Path:
    values = {
        "base_model": "rlv/tiny-chat",
        "backend": "local",
        "lora_rank": 4,
        "learning_rate": 1e-3,
        "steps": 2,
        "groups_per_step": 2,
        "group_size": 4,
        "max_tokens": 8,
        "reward": "exact_match",
        "tasks": "taskset:exact_match-example",
        "save_every": 1,
        "run_dir": str(path.parent / "run"),
        **settings,
    }
    lines = [f"{key} = {json.dumps(value)}" for key, value in values.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
def test_generated_loop_runs_two_local_steps(tmp_path: Path) -> None:
    built = write_loop(
        BuildRequest(
            verifier="0.8*exact_match + 0.2*format",
            model="rlv/tiny-chat",
            rank=4,
            steps=2,
            group_size=4,
            groups_per_step=2,
            output=tmp_path / "train_demo.py",
        )
    )
    result = subprocess.run(
        [
            sys.executable,
            str(built.script),
            "--set",
            "max_tokens=8",
            "--set",
            f"run_dir={tmp_path / 'run'}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = rows(tmp_path / "run" / "metrics.jsonl")
    assert [m["step"] for m in metrics] == [0, 1]
    first = metrics[0]
    assert sum(first["status"].values()) == 8
    assert set(first["time"]) >= {"sampling", "scoring", "training", "total"}
    assert first["importance_ratio_mean"] is None or abs(first["importance_ratio_mean"] - 1) < 1e-3
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["reward"] == "0.8*exact_match + 0.2*format"
    checkpoints = rows(tmp_path / "run" / "checkpoints.jsonl")
    assert checkpoints[-1]["step"] == 2 and checkpoints[-1]["path"].startswith("tinker://")
    samples = rows(tmp_path / "run" / "samples.jsonl")
    assert samples
    for sample in samples:
        assert sample["status"] in ("ok", "invalid")
        if sample["status"] == "ok":
            assert {"exact_match", "format"} <= set(sample["components"])
    # The session is finished, not left for the server to time out.
    assert "closed by its client: success" in (tmp_path / "run" / "server.log").read_text()

    report = rlv("report", str(tmp_path / "run"), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "run" / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_steps_rows_are_written_before_the_checkpoint_that_covers_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kill between the two writes must not lose the step: its metrics row goes first,
    and a resume from the checkpoint before rewinds it away."""
    from rl_verifier.train import TrainConfig, run
    from rl_verifier.train.rundir import RunDir

    order: list[tuple[str, int]] = []
    append = RunDir.append

    def recording(self: RunDir, name: str, row: dict) -> None:
        order.append((name, row.get("step", -1)))
        append(self, name, row)

    monkeypatch.setattr(RunDir, "append", recording)
    monkeypatch.chdir(tmp_path)
    run(TrainConfig(**json_settings(small_config(tmp_path / "c.toml", steps=3, save_every=1))))
    written = [entry for entry in order if entry[0] != "samples.jsonl"]
    assert written == [
        ("metrics.jsonl", 0),
        ("checkpoints.jsonl", 1),
        ("metrics.jsonl", 1),
        ("checkpoints.jsonl", 2),
        ("metrics.jsonl", 2),
        ("checkpoints.jsonl", 3),
    ]


def json_settings(config: Path) -> dict[str, object]:
    return {key: json.loads(value) for key, value in (
        line.split(" = ", 1) for line in config.read_text().splitlines()
    )}  # fmt: skip


@pytest.mark.slow
def test_kill_and_resume_continue_without_duplicates_or_gaps(tmp_path: Path) -> None:
    config = small_config(tmp_path / "c.toml", steps=6, save_every=2)
    run_dir = tmp_path / "run"
    child = subprocess.Popen(
        [*RLV, "train", str(config)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 300
    checkpoints = run_dir / "checkpoints.jsonl"
    while time.monotonic() < deadline:
        if checkpoints.exists() and any(r["step"] >= 2 for r in rows(checkpoints)):
            break
        assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    killed_at = [m["step"] for m in rows(run_dir / "metrics.jsonl")]
    assert killed_at and max(killed_at) < 5  # it really stopped mid-run

    result = rlv("train", "--resume", str(run_dir), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    steps = [m["step"] for m in rows(run_dir / "metrics.jsonl")]
    assert steps == [0, 1, 2, 3, 4, 5]
    # data order continues where it was: each logged sample's task is the step's task
    tasks = arithmetic_tasks()
    for sample in rows(run_dir / "samples.jsonl"):
        expected = {t.id for t in tasks_for_step(tasks, sample["step"], 2, 0)}
        assert sample["task_id"] in expected
    assert "resuming" in result.stderr


def process_ids() -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]


def command_line(pid: int) -> str:
    """The process's command line, '' once it has gone."""
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.slow
def test_a_dead_local_server_stops_the_run_at_once_saying_how_it_died(tmp_path: Path) -> None:
    """The kernel's out-of-memory killer takes the run's rlv serve: the run ends in one line
    within seconds, instead of the SDK retrying a dead port for ever."""
    config = small_config(tmp_path / "c.toml", steps=200)
    run_dir = tmp_path / "run"
    # SIGINT ignored, as for a command started in the background of a shell (CI's case)
    child = subprocess.Popen(
        [*RLV, "train", str(config)], cwd=tmp_path, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not (run_dir / "metrics.jsonl").exists() or not rows(run_dir / "metrics.jsonl"):
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        server = [pid for pid in process_ids() if str(run_dir / "server") in command_line(pid)]
        assert len(server) == 1
        os.kill(server[0], signal.SIGKILL)
        killed = time.monotonic()
        _, err = child.communicate(timeout=120)
        assert time.monotonic() - killed < 60
    finally:
        child.kill()
        child.wait()
    assert child.returncode == 2
    assert "rlv: error: the local rlv serve was killed (SIGKILL" in err
    assert "--resume" in err and "Traceback" not in err.split("rlv: error:")[-1]


def test_tinker_backend_without_key_fails_with_one_line(tmp_path: Path) -> None:
    config = small_config(tmp_path / "c.toml", backend="tinker")
    env = {k: v for k, v in os.environ.items() if k != "TINKER_API_KEY"}
    result = subprocess.run(
        [*RLV, "train", str(config)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "TINKER_API_KEY" in lines[0], result.stderr
    assert not (tmp_path / "run").exists()


def test_unknown_setting_is_named(tmp_path: Path) -> None:
    config = small_config(tmp_path / "c.toml")
    result = rlv("train", str(config), "--set", "grup_size=3", cwd=tmp_path)
    assert result.returncode != 0
    assert "unknown setting 'grup_size'" in result.stderr
    assert "Traceback" not in result.stderr


def test_verifier_failures_stop_the_run_instead_of_scoring_zero(
    tmp_path: Path, register_verifier: object
) -> None:
    from rlv_test_verifiers import Behaviour

    from rl_verifier.base.errors import UserError
    from rl_verifier.train import load_config, run

    register_verifier(Behaviour)  # type: ignore[operator]
    # A deadline no check can meet: every sample times out, which must stop the run.
    config = load_config(
        small_config(tmp_path / "c.toml", reward="behaviour", steps=3),
        ['verifier_config={"timeout_s": 0.0001}', "max_failed_share=0.2"],
    )
    with pytest.raises(UserError, match="could not be scored"):
        run(config)
    metrics = rows(tmp_path / "run" / "metrics.jsonl")
    assert metrics[0]["status"]["timeout"] == 8
    assert metrics[0]["datums"] == 0  # failures were dropped, not trained on as zeros
    assert "closed by its client: errored" in (tmp_path / "run" / "server.log").read_text()


def test_unknown_local_model_fails_in_one_line_before_anything(tmp_path: Path) -> None:
    offered = "is not available to the local server (backend=local); it offers: rlv/tiny-chat"
    config = small_config(tmp_path / "c.toml", base_model="nosuch-org/nosuch-model")
    result = rlv("train", str(config), cwd=tmp_path)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and offered in lines[0], result.stderr
    assert not (tmp_path / "run").exists()

    built = write_loop(  # a generated script set to train on this machine says the same
        BuildRequest(
            verifier="exact_match",
            model="nosuch-org/nosuch-model",
            backend="local",
            output=tmp_path / "gen" / "train_x.py",
        )
    )
    result = subprocess.run(
        [sys.executable, str(built.script)], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and offered in lines[0], result.stderr
    assert sorted(p.name for p in (tmp_path / "gen").iterdir()) == ["train_x.py", "train_x.toml"]


@pytest.mark.slow
def test_toml_paths_and_a_local_model_directory(tmp_path: Path) -> None:
    """Paths in the TOML are relative to it, whatever the current directory; a local
    model directory (as a path relative to the TOML) is preloaded and trained."""
    from rl_verifier_server.models.tiny_model import ensure_tiny_model

    conf, elsewhere = tmp_path / "conf", tmp_path / "elsewhere"
    conf.mkdir()
    elsewhere.mkdir()
    (conf / "model").symlink_to(ensure_tiny_model(), target_is_directory=True)
    tasks = arithmetic_tasks(4)
    (conf / "tasks.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in tasks))
    warm = [
        {"task_id": t.id, "completion": f"<answer>{t.reference['answer']}</answer>"} for t in tasks
    ]
    (conf / "warm.jsonl").write_text("".join(json.dumps(row) + "\n" for row in warm))
    config = small_config(
        conf / "c.toml",
        base_model="model",
        tasks="tasks.jsonl",
        warmup_examples="warm.jsonl",
        warmup_steps=1,
        run_dir="runs/r",
        steps=1,
        groups_per_step=1,
    )
    result = rlv("train", str(config), cwd=elsewhere)
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = conf / "runs" / "r"
    assert [m["step"] for m in rows(run_dir / "metrics.jsonl")] == [-1, 0]  # warm-up, RL
    assert {s["task_id"] for s in rows(run_dir / "samples.jsonl")} <= {t.id for t in tasks}
    assert list(elsewhere.iterdir()) == []
    echo = json.loads((run_dir / "config.json").read_text())  # what --resume reads
    assert echo["base_model"] == str(conf / "model")
    assert (echo["tasks"], echo["warmup_examples"]) == (
        str(conf / "tasks.jsonl"),
        str(conf / "warm.jsonl"),
    )
    assert echo["run_dir"] == str(run_dir)


@pytest.mark.slow
def test_a_warm_started_run_evaluates_the_base_model_then_the_warm_start(
    tmp_path: Path,
) -> None:
    """With a warm start the held-out tasks are evaluated three times at least: the base
    model before the warm start, after it, and after RL; each row names its stage, and
    the report heads its summary with all three."""
    tasks = arithmetic_tasks(4)
    (tmp_path / "tasks.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in tasks))
    warm = [
        {"task_id": t.id, "completion": f"<answer>{t.reference['answer']}</answer>"} for t in tasks
    ]
    (tmp_path / "warm.jsonl").write_text("".join(json.dumps(row) + "\n" for row in warm))
    config = small_config(
        tmp_path / "c.toml",
        tasks="tasks.jsonl",
        warmup_examples="warm.jsonl",
        warmup_steps=2,
        steps=1,
        groups_per_step=1,
        eval_every=1,
        eval_tasks="tasks.jsonl",
        eval_n=1,
    )
    result = rlv("train", str(config), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = rows(tmp_path / "run" / "metrics.jsonl")
    assert [(m["phase"], m["step"], m.get("stage")) for m in metrics] == [
        ("eval", -3, "base"),
        ("warmup", -2, None),
        ("warmup", -1, None),
        ("eval", -1, "warm_start"),
        ("rl", 0, None),
        ("eval", 0, "rl"),
    ]
    samples = rows(tmp_path / "run" / "eval_samples.jsonl")
    assert sorted({s["step"] for s in samples}) == [-3, -1, 0]
    assert "held-out eval of the base model: mean reward" in result.stderr
    assert "held-out eval after the warm start: mean reward" in result.stderr
    page = (tmp_path / "run" / "report.html").read_text()
    for label in ("base model", "after the warm start", "after 1 steps"):
        assert f"held-out eval, {label}" in page


@pytest.mark.slow
def test_held_out_evals_are_logged_and_head_the_report(tmp_path: Path) -> None:
    held_out = tmp_path / "held_out.jsonl"
    held_out.write_text("".join(
        json.dumps({"id": f"h{i}", "prompt": f"Say {i}.", "reference": {"answer": "s"}}) + "\n"
        for i in range(2)
    ))  # fmt: skip
    config = small_config(
        tmp_path / "c.toml", eval_every=1, eval_tasks="held_out.jsonl", eval_n=2, eval_k=[1, 2]
    )
    result = rlv("train", str(config), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = rows(tmp_path / "run" / "metrics.jsonl")
    evals = [m for m in metrics if m["phase"] == "eval"]
    assert [(e["step"], e["trained_steps"], e["stage"]) for e in evals] == [
        (-1, 0, "base"),
        (0, 1, "rl"),
        (1, 2, "rl"),
    ]
    assert [m["step"] for m in metrics if m["phase"] == "rl"] == [0, 1]
    samples = rows(tmp_path / "run" / "eval_samples.jsonl")
    assert len(samples) == 3 * 2 * 2
    for e in evals:
        mine = [s for s in samples if s["step"] == e["step"]]
        assert sum(e["eval"]["status"].values()) == len(mine) == 4
        rewards = [s["score"]["reward"] for s in mine if s["score"]["status"] == "ok"]
        by_task = [[s["score"]["reward"] for s in mine if s["task_id"] == t] for t in ("h0", "h1")]
        assert e["eval"]["mean_reward"]["mean"] == pytest.approx(
            sum(sum(r) / len(r) for r in by_task) / 2
        )
        assert set(e["eval"]["pass_at_k"]) == {"1", "2"} and len(rewards) == 4

    # the same seeds at every eval: the untrained and trained samples differ by the weights
    def seeds(step: int) -> list[tuple[str, int, int]]:
        return sorted(
            (s["task_id"], s["sample_index"], s["seed"]) for s in samples if s["step"] == step
        )

    assert seeds(-1) == seeds(1)

    # rlv train ends with RL's paired held-out difference, task by task, as the report does
    def task_mean(step: int, task: str) -> float:
        mine = [s["score"]["reward"] for s in samples if s["step"] == step and s["task_id"] == task]
        return sum(mine) / len(mine)

    gain = sum(task_mean(1, t) - task_mean(-1, t) for t in ("h0", "h1")) / 2
    line = f"paired difference, RL (after 2 RL steps - base model): {gain:+.3f} ["
    assert line in result.stdout
    page = (tmp_path / "run" / "report.html").read_text()
    assert "paired difference, RL (after 2 RL steps - base model)" in page
    assert "held-out eval, base model" in page
    assert "held-out eval, after 2 steps" in page
    assert "held-out eval, after the warm start" not in page

    # rlv eval of the base model and of the run's last checkpoint draws the samples the
    # run's first and last held-out evals drew; compare pairs them by task
    common = ["--tasks", str(held_out), "--reward", "exact_match", "-n", "2", "-k", "1,2"]
    common += ["--max-tokens", "8"]
    for model, out in (("rlv/tiny-chat", "base"), (str(tmp_path / "run"), "trained")):
        result = rlv("eval", "--model", model, *common, "--out", out, cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-3000:]
    for out, step in (("base", -1), ("trained", 1)):
        drawn = sorted((r["task_id"], r["sample_index"], r["completion"][0]["content"])
                       for r in rows(tmp_path / out / "samples.jsonl"))  # fmt: skip
        logged = sorted((s["task_id"], s["sample_index"], s["completion"][0]["content"])
                        for s in samples if s["step"] == step)  # fmt: skip
        assert drawn == logged, out
    compared = rlv("eval", "compare", "base", "trained", cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    assert "mean_reward" in compared.stdout and "over 2 tasks" in compared.stdout


def test_held_out_settings_are_checked(tmp_path: Path) -> None:
    for settings, message in [
        ({"eval_every": 1}, "eval_every needs eval_tasks"),
        ({"eval_every": 1, "eval_tasks": "x.jsonl", "eval_n": 2, "eval_k": [3]}, "eval_k"),
        ({"eval_every": 1, "eval_tasks": "missing.jsonl"}, "missing.jsonl"),
    ]:
        result = rlv("train", str(small_config(tmp_path / "c.toml", **settings)), cwd=tmp_path)
        assert result.returncode == 2 and message in result.stderr, (settings, result.stderr)
        assert not (tmp_path / "run").exists()
