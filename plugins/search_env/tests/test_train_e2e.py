"""`rlv train` with the search_tools environment on the local backend (rlv/tiny-chat)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rl_verifier.testing import get_plugins


def rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def train(tmp_path: Path, reward: str) -> Path:
    pytest.importorskip("rl_verifier_server.launch", reason="backend=local needs rlv serve")
    from rl_verifier.train import load_config, run

    settings = {
        "base_model": "rlv/tiny-chat",
        "backend": "local",
        "lora_rank": 4,
        "environment": "search_tools",
        "tasks": "taskset:search-example",
        "reward": reward,
        "max_turns": 2,
        "steps": 1,
        "groups_per_step": 2,
        "group_size": 2,
        "max_tokens": 32,
        "executor": "inline",
        "run_dir": str(tmp_path / "run"),
    }
    config = tmp_path / "search.toml"
    config.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items()))
    return run(load_config(config))


@pytest.mark.slow
def test_local_training_step_with_search_tools(tmp_path: Path) -> None:
    registry = get_plugins().registry
    reward = "tool_calls" if "tool_calls" in registry else "exact_match"
    run_dir = train(tmp_path, reward)

    (metrics,) = rows(run_dir / "metrics.jsonl")
    assert metrics["step"] == 0 and metrics["phase"] == "rl"
    status = metrics["status"]
    assert isinstance(status, dict) and sum(status.values()) == 4
    assert isinstance(metrics["time"], dict) and metrics["time"]["total"] > 0
    samples = rows(run_dir / "samples.jsonl")
    assert samples and all(1 <= int(str(s["turns"])) <= 2 for s in samples)
    if reward != "tool_calls":
        pytest.skip(
            "tool_calls verifier not installed (pip install -e plugins/tool_calls): trained "
            "with exact_match; per-step call counts and citation validity not checked"
        )
    components = metrics["components"]
    assert isinstance(components, dict)
    if status.get("ok"):
        assert {"calls", "citation_validity"} <= set(components), components
