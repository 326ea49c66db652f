"""The search_tools environment driven by run_episode with a scripted sampler."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from rl_verifier import ChatMessage, Completion, Task, UserError
from rl_verifier.testing import get_plugins, pack
from rl_verifier.train import Episode, Renderer, TrainConfig, Turn, load_config, run_episode
from rl_verifier_retrieval import BM25Index, Document
from rl_verifier_search_env.corpus import CORPUS_ENV, load_index
from rl_verifier_search_env.env import SearchTools, make_env
from rl_verifier_search_env.fictopedia import fictopedia_tasks


class Script:
    """A fake ``sample`` coroutine: scripted replies in order, each closed by the stop token."""

    def __init__(self, renderer: Renderer, replies: list[str]) -> None:
        self.renderer = renderer
        self.replies = replies
        self.prompts: list[list[int]] = []

    async def __call__(self, prompt: list[int]) -> Turn:
        index = len(self.prompts)
        self.prompts.append(list(prompt))
        sampled = [*self.renderer.encode(self.replies[index]), *self.renderer.stop()[:1]]
        logprobs = [-0.1] * len(sampled)
        return Turn(sampled, logprobs, self.renderer.response_text(sampled))


def call(name: str, **arguments: Any) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


TASK = next(t for t in fictopedia_tasks() if t.metadata["kind"] == "ship_builder")
SHIP = TASK.reference["support"][0]


def episode(env: SearchTools, renderer: Renderer, replies: list[str], task: Task = TASK) -> Episode:
    return asyncio.run(run_episode(env, task, renderer, Script(renderer, replies), 4096))


def ship_name(task: Task) -> str:
    assert isinstance(task.prompt, str)
    return task.prompt.split("the ship ")[1].split("?")[0]


def test_search_then_answer_with_a_citation(renderer: Renderer) -> None:
    answer = TASK.reference["answers"][0]
    replies = [
        call("search", query=f"{ship_name(TASK)} ship", k=3),
        f"It was built by {answer} [{SHIP}]. <answer>{answer}</answer>",
    ]
    env = SearchTools(load_index(), max_turns=4)
    result = episode(env, renderer, replies)

    assert (result.turns, result.end_reason) == (2, "done")
    system, _user, first, tool, last = result.messages
    assert "search(query: str, k: int = 3)" in system["content"]
    assert first["content"] == replies[0] and last["content"] == replies[1]
    assert tool["role"] == "tool" and tool["name"] == "search"
    hits = json.loads(tool["content"])
    assert len(hits) == 3 and hits[0]["id"] == SHIP
    assert answer in hits[0]["text"] and set(hits[0]) == {"id", "title", "text"}
    assert all(len(hit["text"]) <= 200 for hit in hits)
    (record,) = result.tool_calls
    assert record["name"] == "search" and record["result"] == hits

    # Tool output and the next generation prompt are inserted, not sampled: no loss on them.
    packed = pack(result.segments, 1.0)
    prompt, s1, inserted, s2 = result.segments
    assert [s.sampled for s in result.segments] == [False, True, False, True]
    assert SHIP in renderer.tokenizer.decode(inserted.tokens)
    start = len(prompt.tokens) + len(s1.tokens) - 1  # target index of inserted[0]
    assert packed.mask[start : start + len(inserted.tokens)] == [0.0] * len(inserted.tokens)
    assert sum(packed.mask) == len(s1.tokens) + len(s2.tokens)


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (call("lookup", query="x"), "unknown tool 'lookup'; available tools: search"),
        (call("search", query="x", k=0), "between 1 and 10"),
        (call("search", query="x", k="3"), "'k' must be an integer"),
        (call("search", query=""), "non-empty string"),
        (call("search", q="x"), "TypeError"),
        ('<tool_call>{"name": "search", "arguments": {</tool_call>', "malformed tool call"),
    ],
)
def test_bad_calls_get_error_replies(renderer: Renderer, reply: str, error: str) -> None:
    env = SearchTools(load_index(), max_turns=3)
    result = episode(env, renderer, [reply, "<answer>unknown</answer>"])
    assert (result.turns, result.end_reason) == (2, "done")
    tool = result.messages[3]
    assert tool["role"] == "tool"
    assert error in json.loads(tool["content"])["error"]
    assert "error" in result.tool_calls[0]


def test_turn_limit_is_respected(renderer: Renderer) -> None:
    env = SearchTools(load_index(), max_turns=2)
    searches = [call("search", query="river"), call("search", query="town"), "never sampled"]
    result = episode(env, renderer, searches)
    assert (result.turns, result.end_reason) == (2, "max_turns")
    assert len(result.tool_calls) == 1  # the last turn's call is not run
    assert [m["role"] for m in result.messages][-2:] == ["tool", "assistant"]


def test_factory_uses_max_turns_and_the_configured_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = TrainConfig(tasks="taskset:search-example", max_turns=3)
    factory = get_plugins().environments["search_tools"].value
    env = factory(config)
    assert isinstance(env, SearchTools)
    assert (env.name, env.max_turns, len(env.index)) == ("search_tools", 3, 200)

    corpus = tmp_path / "corpus.jsonl"
    rows = [{"id": "d1", "title": "Zebras", "text": "Striped."}, {"id": "d2", "text": "Owls."}]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv(CORPUS_ENV, str(corpus))
    assert [h["id"] for h in make_env(config).tools["search"](query="zebras")] == ["d1"]

    saved = tmp_path / "index"
    BM25Index.build([Document("s1", "Saved owls.", "Owl")]).save(saved)
    monkeypatch.setenv(CORPUS_ENV, str(saved))
    assert [h["id"] for h in make_env(config).tools["search"](query="owl", k=1)] == ["s1"]


def test_plugin_registers_environment_and_task_sets() -> None:
    plugins = get_plugins()
    assert "search_tools" in plugins.environments
    assert {"fictopedia", "search-example"} <= set(plugins.task_sets)
    assert "tool_calls-example" not in plugins.task_sets or (
        plugins.task_sets["tool_calls-example"].plugin != "search_env"
    )


def test_tool_calls_verifier_rewards_a_good_episode(renderer: Renderer) -> None:
    registry = get_plugins().registry
    if "tool_calls" not in registry:
        pytest.skip("tool_calls verifier not installed (pip install -e plugins/tool_calls)")
    answer = TASK.reference["answers"][0]
    replies = [
        call("search", query=f"{ship_name(TASK)} ship"),
        f"Built by {answer} [{SHIP}]. <answer>{answer}</answer>",
    ]
    env = SearchTools(load_index(), max_turns=4)
    result = episode(env, renderer, replies)
    completion = Completion(task_id=TASK.id, completion=result.messages[len(env.start(TASK)) :])
    verifier = registry.get("tool_calls").cls()
    verdict = verifier.verify(TASK, completion)
    components = verdict.components
    assert (components["answer"], components["citation_validity"]) == (1.0, 1.0), verdict
    assert (components["legality"], components["calls"]) == (1.0, 1.0), verdict
    fabricated = completion.model_copy(
        update={
            "completion": [
                *completion.completion[:-1],
                ChatMessage(role="assistant", content=f"<answer>{answer}</answer> [fx-999]"),
            ]
        }
    )
    assert verifier.verify(TASK, fabricated).components["citation_validity"] < 1.0


def test_the_corpus_is_a_setting_of_the_run(tmp_path: Path) -> None:
    """``environment_config.corpus`` picks the documents; an unknown key is named."""
    from rl_verifier.testing import build_environment as environment

    def validate(data: dict[str, Any], overrides: tuple[str, ...]) -> TrainConfig:
        return TrainConfig.model_validate(data)

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "d1", "title": "Zorblat", "text": "Zorblat is a moon."}\n')
    settings = {"environment": "search_tools", "environment_config": {"corpus": str(corpus)}}
    env = environment("search_tools", validate({"tasks": "t.jsonl", **settings}, ()))
    assert [doc.id for doc in env.index.docs] == ["d1"]
    bad = {"environment": "search_tools", "environment_config": {"corpse": str(corpus)}}
    with pytest.raises(UserError, match="unknown setting 'corpse'"):
        environment("search_tools", validate({"tasks": "t.jsonl", **bad}, ()))


def test_a_relative_corpus_is_read_from_the_config_files_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path setting of the environment resolves as ``tasks`` does: against the TOML's
    folder, not the directory ``rlv train`` runs in."""
    recipe = tmp_path / "recipe"
    recipe.mkdir()
    (recipe / "docs.jsonl").write_text("")
    (recipe / "run.toml").write_text(
        'tasks = "t.jsonl"\nenvironment = "search_tools"\n'
        'environment_config = { corpus = "docs.jsonl" }\n'
    )
    monkeypatch.chdir(tmp_path)
    config = load_config(recipe / "run.toml")
    assert config.environment_config["corpus"] == str(recipe / "docs.jsonl")
    assert config.tasks == str(recipe / "t.jsonl")
