"""``rlv train`` checks the whole config before it creates anything or starts a server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rl_verifier.base.errors import UserError
from rl_verifier.train import load_config, run
from rl_verifier.train.local_models import cached_hub_models, check_local_model

TASK = {"id": "t1", "prompt": "Say hi.", "reference": {"answer": "hi"}}


def write_jsonl(path: Path, *rows: dict[str, object]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path.name


def config_file(folder: Path, **settings: object) -> Path:
    values: dict[str, object] = {
        "backend": "local",
        "base_model": "rlv/tiny-chat",
        "reward": "exact_match",
        "tasks": "taskset:exact_match-example",
        "run_dir": str(folder / "runs" / "r"),
        "steps": 2,
        **settings,
    }
    path = folder / "train.toml"
    path.write_text("".join(f"{key} = {toml_value(value)}\n" for key, value in values.items()))
    return path


def toml_value(value: object) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def write_inputs(folder: Path) -> None:
    """Files the broken configs below name."""
    write_jsonl(folder / "tasks.jsonl", TASK)
    write_jsonl(folder / "own.jsonl", {**TASK, "verifier": "nosuch"})
    write_jsonl(folder / "stray.jsonl", {"task_id": "zz", "completion": "hi"})


BROKEN: dict[str, tuple[dict[str, object], str]] = {  # settings, and what the error says
    "reward": ({"reward": "nosuch"}, "nosuch"),
    "reward settings": ({"verifier_config": {"no_such_setting": 1}}, "no_such_setting"),
    "tasks file": ({"tasks": "missing.jsonl"}, "missing.jsonl: no such file"),
    "task set": ({"tasks": "taskset:nosuch"}, "unknown task set 'nosuch'"),
    "task's verifier": ({"reward": "", "tasks": "own.jsonl"}, "nosuch"),
    "environment": ({"environment": "nosuch"}, "unknown environment 'nosuch'"),
    "warm-up file": (
        {"tasks": "tasks.jsonl", "warmup_examples": "missing.jsonl", "warmup_steps": 1},
        "missing.jsonl: no such file",
    ),
    "warm-up task": (
        {"tasks": "tasks.jsonl", "warmup_examples": "stray.jsonl", "warmup_steps": 1},
        "task_id 'zz' is not a task of this run",
    ),
    "local model": (
        {"base_model": "nosuch-org/nosuch-model"},
        "base model 'nosuch-org/nosuch-model' is not available to the local server",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_bad_config_fails_before_anything_is_created(case: str, tmp_path: Path) -> None:
    settings, message = BROKEN[case]
    write_inputs(tmp_path)
    config = load_config(config_file(tmp_path, **settings))
    with pytest.raises(UserError, match=re.escape(message)):
        run(config)
    assert not (tmp_path / "runs").exists()  # no run directory, no server log


def test_resume_with_a_bad_config_leaves_the_run_as_it_was(tmp_path: Path) -> None:
    config = load_config(config_file(tmp_path, steps=6))
    run_dir = tmp_path / "killed"
    run_dir.mkdir()
    (run_dir / "config.json").write_text(json.dumps(config.model_dump(mode="json")))
    write_jsonl(run_dir / "metrics.jsonl", *({"step": step} for step in range(4)))
    write_jsonl(run_dir / "checkpoints.jsonl", {"step": 2, "path": "tinker://x", "kind": "state"})
    before = {path.name: path.read_bytes() for path in run_dir.iterdir()}
    broken = load_config(run_dir / "config.json", ["reward=nosuch"])
    with pytest.raises(UserError, match="nosuch"):
        run(broken, resume=run_dir)
    assert {path.name: path.read_bytes() for path in run_dir.iterdir()} == before  # no rewind


def test_builtin_and_model_directories_are_offered(tmp_path: Path) -> None:
    check_local_model("rlv/tiny-chat")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    check_local_model(str(tmp_path / "model"))
    with pytest.raises(UserError, match=r"has no config\.json"):
        check_local_model(str(tmp_path))


def fake_hub_cache(root: Path, repo_id: str) -> Path:
    """A Hugging Face cache holding ``repo_id`` with a config.json, as the hub client lays
    it out (refs/main -> snapshots/<commit>/config.json -> blobs/<hash>)."""
    repo = root / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("c0ffee")
    (repo / "blobs").mkdir()
    (repo / "blobs" / "b1").write_text("{}")
    (repo / "snapshots" / "c0ffee").mkdir(parents=True)
    (repo / "snapshots" / "c0ffee" / "config.json").symlink_to("../../blobs/b1")
    return root


def test_hub_models_in_the_local_cache_are_offered_and_listed(tmp_path: Path) -> None:
    cache = fake_hub_cache(tmp_path / "hub", "some-org/cached-model")
    fake_hub_cache(cache, "rlv/tiny-chat")  # the built-in model, published by rlv serve
    assert cached_hub_models(cache) == ["rlv/tiny-chat", "some-org/cached-model"]
    check_local_model("some-org/cached-model", cache)
    with pytest.raises(UserError) as error:
        check_local_model("some-org/other-model", cache)
    message = str(error.value)
    assert "\n" not in message
    assert "rlv/tiny-chat (built in)" in message
    assert message.count("rlv/tiny-chat") == 1, message  # offered once
    assert "some-org/cached-model (Hugging Face cache)" in message
    assert cached_hub_models(tmp_path / "no-cache-here") == []


def test_a_model_the_server_refuses_later_is_told_in_the_servers_words() -> None:
    """What preflight cannot see (a model directory that does not load) still reads as
    the server's one-line reason, from either kind of SDK error."""
    import httpx
    import tinker
    from tinker import types

    from rl_verifier.train.loop import server_words

    failed = tinker.RequestFailedError(
        "Request failed: internal error: ValueError: Unrecognized model in /m. "
        "for self.request_id='abc' and expected type self.model_cls=<class 'X'>",
        request_id="abc",
        category=types.RequestErrorCategory.Server,
    )
    assert server_words(failed) == "internal error: ValueError: Unrecognized model in /m."
    response = httpx.Response(400, request=httpx.Request("POST", "http://127.0.0.1/x"))
    refused = tinker.BadRequestError(
        "Error code: 400 - {...}",
        response=response,
        body={"error": "unknown base model 'm': this server serves ...", "category": "user"},
    )
    assert server_words(refused) == "unknown base model 'm': this server serves ..."
