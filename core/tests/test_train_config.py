"""Training settings: paths in a TOML are relative to the TOML, ``--set`` ones to the
current directory, and the echoed config names the same files from anywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rl_verifier.train.config import load_config


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``project/conf/train.toml`` beside its data; the current directory is elsewhere."""
    conf = tmp_path / "project" / "conf"
    (conf / "data").mkdir(parents=True)
    (conf / "model").mkdir()
    (conf / "model" / "config.json").write_text("{}")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return conf


def write_toml(path: Path, **settings: object) -> Path:
    path.write_text("".join(f"{key} = {json.dumps(value)}\n" for key, value in settings.items()))
    return path


def test_paths_in_a_toml_are_relative_to_the_toml(layout: Path) -> None:
    toml = write_toml(
        layout / "train.toml",
        tasks="data/tasks.jsonl",
        warmup_examples="../warm.jsonl",
        run_dir="runs/x-{time}",
        base_model="model",
    )
    config = load_config(toml)
    assert config.tasks == str(layout / "data" / "tasks.jsonl")
    assert config.warmup_examples == str(layout.parent / "warm.jsonl")
    assert config.run_dir == str(layout / "runs" / "x-{time}")
    assert config.base_model == str(layout / "model")  # a model directory beside the TOML


def test_a_toml_given_by_a_relative_path_resolves_the_same(layout: Path) -> None:
    toml = write_toml(layout / "train.toml", tasks="data/tasks.jsonl")
    relative = Path("..") / "project" / "conf" / "train.toml"
    assert (
        load_config(relative).tasks
        == load_config(toml).tasks
        == str(layout / "data" / "tasks.jsonl")
    )


def test_names_are_not_paths(layout: Path) -> None:
    toml = write_toml(
        layout / "train.toml", tasks="taskset:exact_match-example", base_model="Qwen/Qwen3-8B"
    )
    config = load_config(toml)
    assert config.tasks == "taskset:exact_match-example"
    assert config.base_model == "Qwen/Qwen3-8B"


def test_set_overrides_are_relative_to_the_current_directory(layout: Path) -> None:
    toml = write_toml(layout / "train.toml", tasks="data/tasks.jsonl")
    config = load_config(toml, ["tasks=mine.jsonl", "run_dir=out/{time}", "base_model=./m"])
    cwd = Path.cwd()
    assert config.tasks == str(cwd / "mine.jsonl")
    assert config.run_dir == str(cwd / "out" / "{time}")
    assert config.base_model == str(cwd / "m")


def test_default_run_dir_is_under_the_current_directory(layout: Path) -> None:
    config = load_config(write_toml(layout / "train.toml", tasks="data/tasks.jsonl"))
    assert config.run_dir == str(Path.cwd() / "runs" / "{time}")


def test_echoed_config_names_the_same_files_from_any_directory(
    layout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    toml = write_toml(
        layout / "train.toml",
        tasks="data/tasks.jsonl",
        warmup_examples="data/warm.jsonl",
        warmup_steps=2,
    )
    config = load_config(toml)
    run_dir = layout / "runs" / "r"
    run_dir.mkdir(parents=True)
    echo = run_dir / "config.json"
    echo.write_text(json.dumps(config.model_dump(mode="json")))  # what a run writes
    monkeypatch.chdir(layout.parent.parent)
    assert load_config(echo) == config
    assert load_config(echo, ["steps=3"]).model_dump() == {**config.model_dump(), "steps": 3}
