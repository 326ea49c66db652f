"""The chat renderer on the real tiny-chat tokenizer, and single- and multi-turn episodes."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from rl_verifier.base.contracts import ChatMessage, Task
from rl_verifier.train.environments import (
    TOOL_RECORD_KEY,
    Environment,
    Episode,
    SingleTurn,
    ToolCall,
    ToolUse,
    Turn,
    parse_tool_calls,
    run_episode,
    run_group,
    task_messages,
)
from rl_verifier.train.packing import pack
from rl_verifier.train.renderer import Renderer

IM_START, IM_END = 1, 2
USER = [{"role": "user", "content": "What is 2 + 5?"}]
TASK = Task(id="t1", prompt="What is 2 + 5?")


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    transformers = pytest.importorskip("transformers")
    tiny_model = pytest.importorskip("rl_verifier_server.models.tiny_model")
    return transformers.AutoTokenizer.from_pretrained(
        tiny_model.ensure_tiny_model(), local_files_only=True
    )


@pytest.fixture(scope="module")
def renderer(tokenizer: Any) -> Renderer:
    return Renderer(tokenizer)


def encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer.encode(text, add_special_tokens=False))


# --------------------------------------------------------------------------------------------
# Renderer


def test_prompt_tokens_are_encoded_chatml(tokenizer: Any, renderer: Renderer) -> None:
    text = "<|im_start|>user\nWhat is 2 + 5?<|im_end|>\n<|im_start|>assistant\n"
    expected = encode(tokenizer, text)
    assert renderer.prompt_tokens(USER) == expected
    assert renderer.prompt_tokens("What is 2 + 5?") == expected
    assert expected[0] == IM_START
    assert expected.count(IM_START) == 2 and expected.count(IM_END) == 1


def test_stop_and_response_text(tokenizer: Any, renderer: Renderer) -> None:
    assert renderer.stop() == [IM_END]
    reply = encode(tokenizer, "The answer is 7.")
    assert renderer.response_text([*reply, IM_END]) == "The answer is 7."
    assert renderer.response_text(reply) == "The answer is 7."
    assert renderer.response_text([]) == ""


@pytest.mark.parametrize("closed", [True, False], ids=["stop-token", "cut-by-length"])
def test_continuation_is_the_rendering_diff(
    tokenizer: Any, renderer: Renderer, closed: bool
) -> None:
    reply = 'Let me add. <tool_call>{"name": "add", "arguments": {"a": 2, "b": 5}}</tool_call>'
    sampled = encode(tokenizer, reply) + ([IM_END] if closed else [])
    tool = [{"role": "tool", "name": "add", "content": "7"}]
    continuation = renderer.continuation_tokens(USER, sampled, tool)
    closing = "" if closed else "<|im_end|>"
    expected_text = f"{closing}\n<|im_start|>tool\n7<|im_end|>\n<|im_start|>assistant\n"
    assert continuation == encode(tokenizer, expected_text)
    assert continuation[0] == (201 if closed else IM_END)
    full = [*USER, {"role": "assistant", "content": reply}, *tool]
    assert renderer.prompt_tokens(USER) + sampled + continuation == renderer.prompt_tokens(full)


def test_continuation_with_no_new_messages(tokenizer: Any, renderer: Renderer) -> None:
    sampled = [*encode(tokenizer, "Hello"), IM_END]
    continuation = renderer.continuation_tokens(USER, sampled, [])
    assert continuation == encode(tokenizer, "\n<|im_start|>assistant\n")


def test_continuation_rejects_a_template_that_is_not_prefix_consistent(tokenizer: Any) -> None:
    trimming = copy.deepcopy(tokenizer)  # like Llama 3: content is trimmed when rendered
    trimming.chat_template = tokenizer.chat_template.replace(
        "{{- message['content'] }}", "{{- message['content'] | trim }}"
    )
    renderer = Renderer(trimming)
    assert renderer.stop() == [IM_END]
    fine = renderer.continuation_tokens(USER, [*encode(tokenizer, "seven"), IM_END], [])
    assert fine == encode(tokenizer, "\n<|im_start|>assistant\n")
    with pytest.raises(ValueError, match="not prefix-consistent"):
        renderer.continuation_tokens(USER, [*encode(tokenizer, "seven "), IM_END], [])

    rewriting = copy.deepcopy(tokenizer)  # earlier assistant turns render differently
    rewriting.chat_template = tokenizer.chat_template.replace(
        "{{- message['content'] }}",
        "{%- if message['role'] == 'assistant' and not loop.last %}(earlier)"
        "{%- else %}{{- message['content'] }}{%- endif %}",
    )
    tool = [{"role": "tool", "content": "7"}]
    with pytest.raises(ValueError, match="changes how the earlier turns render"):
        Renderer(rewriting).continuation_tokens(USER, [*encode(tokenizer, "x"), IM_END], tool)


# --------------------------------------------------------------------------------------------
# Episodes


class Script:
    """A fake sampler: replies in order, each closed with <|im_end|> unless told otherwise."""

    def __init__(self, renderer: Renderer, replies: list[str], cut: frozenset[int] = frozenset()):
        self.renderer = renderer
        self.replies = replies
        self.cut = cut
        self.prompts: list[list[int]] = []
        self.turns: list[Turn] = []

    async def __call__(self, prompt: list[int]) -> Turn:
        index = len(self.prompts)
        self.prompts.append(list(prompt))
        sampled = self.renderer.encode(self.replies[index])
        if index not in self.cut:
            sampled.append(IM_END)
        logprobs = [-0.01 * (index + 1) * (k + 1) for k in range(len(sampled))]
        turn = Turn(sampled, logprobs, self.renderer.response_text(sampled))
        self.turns.append(turn)
        return turn


def run(
    env: Environment,
    renderer: Renderer,
    sample: Callable[[list[int]], Awaitable[Turn]],
    max_context: int = 2048,
    task: Task = TASK,
) -> Episode:
    return asyncio.run(run_episode(env, task, renderer, sample, max_context))


def call(name: str, **arguments: Any) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def boom() -> None:
    """Always fails."""
    raise RuntimeError("kaboom")


TOOLS: dict[str, Callable[..., Any]] = {"add": add, "boom": boom}


def expected_mask(episode: Episode) -> list[float]:
    mask: list[float] = []
    for segment in episode.segments:
        mask += [1.0 if segment.sampled else 0.0] * len(segment.tokens)
    return mask[1:]


def test_single_turn_episode(renderer: Renderer) -> None:
    script = Script(renderer, ["It is 7."])
    episode = run(SingleTurn(), renderer, script)
    prompt = renderer.prompt_tokens(USER)
    assert script.prompts == [prompt]
    turn = script.turns[0]
    assert [(s.tokens, s.sampled, s.logprobs) for s in episode.segments] == [
        (prompt, False, None),
        (turn.sampled, True, turn.logprobs),
    ]
    assert episode.messages == [*USER, {"role": "assistant", "content": "It is 7."}]
    assert episode.final_text == "It is 7."
    assert (episode.turns, episode.tool_calls, episode.end_reason) == (1, [], "max_turns")
    packed = pack(episode.segments, 1.0)
    assert packed.mask == [0.0] * (len(prompt) - 1) + [1.0] * len(turn.sampled)
    assert packed.logprobs == [0.0] * (len(prompt) - 1) + turn.logprobs


def test_tool_use_episode(tokenizer: Any, renderer: Renderer) -> None:
    replies = [f"I will add. {call('add', a=2, b=5)}", "The answer is 7."]
    script = Script(renderer, replies)
    env = ToolUse(TOOLS, max_turns=4)
    episode = run(env, renderer, script)

    assert (episode.turns, episode.end_reason, episode.final_text) == (2, "done", replies[1])
    assert episode.tool_calls == [{"name": "add", "arguments": {"a": 2, "b": 5}, "result": 7}]
    system, user, first, tool, last = episode.messages
    assert system["role"] == "system"
    assert "- add(a: int, b: int) -> int: Add two integers." in system["content"]
    assert user == USER[0]
    assert first == {"role": "assistant", "content": replies[0]}
    assert tool == {"role": "tool", "content": "7", "name": "add"}
    assert last == {"role": "assistant", "content": replies[1]}
    assert all(TOOL_RECORD_KEY not in m for m in episode.messages)

    prompt, s1, inserted, s2 = episode.segments
    assert [s.sampled for s in episode.segments] == [False, True, False, True]
    assert prompt.tokens == renderer.prompt_tokens(episode.messages[:2])
    assert inserted.tokens == encode(
        tokenizer, "\n<|im_start|>tool\n7<|im_end|>\n<|im_start|>assistant\n"
    )
    assert inserted.logprobs is None
    assert (s1.tokens, s1.logprobs) == (script.turns[0].sampled, script.turns[0].logprobs)
    assert (s2.tokens, s2.logprobs) == (script.turns[1].sampled, script.turns[1].logprobs)
    # The second turn was sampled from exactly the rendering of the chat so far.
    assert script.prompts[1] == prompt.tokens + s1.tokens + inserted.tokens
    assert script.prompts[1] == renderer.prompt_tokens(episode.messages[:4])

    packed = pack(episode.segments, 0.25)
    assert packed.mask == expected_mask(episode)
    assert sum(packed.mask) == len(s1.tokens) + len(s2.tokens)
    assert packed.advantages == [0.25 * m for m in packed.mask]
    sampled_logprobs = [lp for lp, m in zip(packed.logprobs, packed.mask, strict=True) if m]
    assert sampled_logprobs == script.turns[0].logprobs + script.turns[1].logprobs
    assert all(lp == 0.0 for lp, m in zip(packed.logprobs, packed.mask, strict=True) if not m)


class Seeded(ToolUse):
    """An environment whose opening differs at each ``start`` (a random system prompt)."""

    def __init__(self) -> None:
        super().__init__(TOOLS, max_turns=2)
        self.starts = 0

    def start(self, task: Task) -> list[dict[str, Any]]:
        self.starts += 1
        return [{"role": "system", "content": f"Variant {self.starts}."}, *USER]


def test_a_group_starts_its_environment_once_and_every_episode_keeps_that_opening(
    renderer: Renderer,
) -> None:
    env = Seeded()
    prompts: list[tuple[list[int], int, int]] = []

    async def sample(prompt: list[int], count: int, stream: int) -> list[Turn]:
        prompts.append((list(prompt), count, stream))
        text = call("add", a=1, b=2) if stream == 0 else "3"
        tokens = [*renderer.encode(text), IM_END]
        return [Turn(tokens, [-0.5] * len(tokens), text) for _ in range(count)]

    episodes = asyncio.run(run_group(env, TASK, renderer, sample, 3, 2048))
    assert env.starts == 1
    shared = renderer.prompt_tokens([{"role": "system", "content": "Variant 1."}, *USER])
    assert prompts[0] == (shared, 3, 0)
    assert sorted(stream for _, _, stream in prompts[1:]) == [1, 2, 3]
    for episode in episodes:
        assert episode.segments[0].tokens == shared
        assert episode.messages[0]["content"] == "Variant 1." and episode.prompt_messages == 2
        assert (episode.turns, episode.final_text) == (2, "3")


def test_unknown_and_raising_tools_become_error_results(renderer: Renderer) -> None:
    replies = [call("nope", x=1) + call("boom") + call("add", a=1, b=1), "Done."]
    episode = run(ToolUse(TOOLS), renderer, Script(renderer, replies))
    assert episode.turns == 2 and episode.end_reason == "done"
    unknown, raised, ok = episode.tool_calls
    assert unknown == {
        "name": "nope",
        "arguments": {"x": 1},
        "error": "unknown tool 'nope'; available tools: add, boom",
    }
    assert raised == {"name": "boom", "arguments": {}, "error": "RuntimeError: kaboom"}
    assert ok == {"name": "add", "arguments": {"a": 1, "b": 1}, "result": 2}
    tools = [m for m in episode.messages if m["role"] == "tool"]
    assert [m["name"] for m in tools] == ["nope", "boom", "add"]
    assert json.loads(tools[0]["content"]) == {"error": unknown["error"]}
    assert json.loads(tools[1]["content"]) == {"error": "RuntimeError: kaboom"}
    assert tools[2]["content"] == "2"


def test_malformed_json_is_reported_to_the_model(renderer: Renderer) -> None:
    replies = ['<tool_call>{"name": "add", "arguments": {"a": 1,}</tool_call>', "Sorry."]
    script = Script(renderer, replies)
    episode = run(ToolUse(TOOLS), renderer, script)
    assert episode.turns == 2
    (record,) = episode.tool_calls
    assert record["name"] is None and record["error"].startswith("malformed tool call JSON")
    tool = episode.messages[3]
    assert tool["role"] == "tool" and "name" not in tool
    assert json.loads(tool["content"])["error"] == record["error"]
    assert script.prompts[1] == renderer.prompt_tokens(episode.messages[:4])


def test_max_turns_is_respected(renderer: Renderer) -> None:
    replies = [call("add", a=i, b=1) for i in range(5)]
    script = Script(renderer, replies)
    episode = run(ToolUse(TOOLS, max_turns=2), renderer, script)
    assert (episode.turns, episode.end_reason) == (2, "max_turns")
    assert len(script.prompts) == 2
    assert episode.tool_calls == [{"name": "add", "arguments": {"a": 0, "b": 1}, "result": 1}]
    assert [m["role"] for m in episode.messages] == [
        "system", "user", "assistant", "tool", "assistant"
    ]  # fmt: skip
    assert [s.sampled for s in episode.segments] == [False, True, False, True]


def test_max_context_stops_before_the_next_prompt(renderer: Renderer) -> None:
    replies = [call("add", a=2, b=5), "7"]
    full = run(ToolUse(TOOLS), renderer, Script(renderer, replies))
    next_prompt = sum(len(s.tokens) for s in full.segments[:3])
    script = Script(renderer, replies)
    episode = run(ToolUse(TOOLS), renderer, script, max_context=next_prompt)
    assert (episode.turns, episode.end_reason) == (1, "max_context")
    assert [s.sampled for s in episode.segments] == [False, True]
    assert episode.messages[-1]["role"] == "assistant"
    assert len(episode.tool_calls) == 1  # the call ran, but its result never reached the model
    roomy = run(ToolUse(TOOLS), renderer, Script(renderer, replies), max_context=next_prompt + 1)
    assert roomy.turns == 2


def test_turn_cut_by_length_is_closed_before_tool_results(renderer: Renderer) -> None:
    replies = [call("add", a=2, b=5), "7"]
    script = Script(renderer, replies, cut=frozenset({0}))
    episode = run(ToolUse(TOOLS), renderer, script)
    assert episode.turns == 2
    assert episode.segments[1].tokens[-1] != IM_END
    assert episode.segments[2].tokens[0] == IM_END
    assert script.prompts[1] == renderer.prompt_tokens(episode.messages[:4])


def test_prompt_longer_than_context_is_an_error(renderer: Renderer) -> None:
    with pytest.raises(ValueError, match="leaves no room"):
        run(SingleTurn(), renderer, Script(renderer, ["x"]), max_context=5)


def test_turn_with_mismatched_logprobs_is_an_error(renderer: Renderer) -> None:
    async def bad(prompt: list[int]) -> Turn:
        return Turn([5, 6, IM_END], [-0.1], "x")

    with pytest.raises(ValueError, match="3 tokens but 1 logprobs"):
        run(SingleTurn(), renderer, bad)


# --------------------------------------------------------------------------------------------
# Parsing and setup


def test_parse_tool_calls() -> None:
    text = (
        'a <tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call> b '
        '<tool_call>\n{"name": "f", "arguments": "{\\"x\\": 2}"}\n</tool_call>'
        '<tool_call>{"name": "g"}</tool_call>'
    )
    assert parse_tool_calls(text) == [
        ToolCall("add", {"a": 1}),
        ToolCall("f", {"x": 2}),
        ToolCall("g", {}),
    ]
    assert parse_tool_calls("no calls here") == []
    (unterminated,) = parse_tool_calls('<tool_call>{"name": "add"')
    assert unterminated.error is not None and "unterminated" in unterminated.error
    (not_object,) = parse_tool_calls("<tool_call>[1, 2]</tool_call>")
    assert not_object.error is not None and "JSON object" in not_object.error
    (no_name,) = parse_tool_calls('<tool_call>{"arguments": {}}</tool_call>')
    assert no_name.error is not None and "'name'" in no_name.error
    (bad_args,) = parse_tool_calls('<tool_call>{"name": "f", "arguments": [1]}</tool_call>')
    assert bad_args.name == "f" and bad_args.error is not None


def test_tool_results_are_json_or_text() -> None:
    tools: dict[str, Callable[..., Any]] = {
        "text": lambda: "plain",
        "obj": lambda: {"k": [1, 2]},
        "odd": lambda: object,
    }
    env = ToolUse(tools, describe=False)
    replies = call("text") + call("obj") + call("odd")
    messages = env.respond(TASK, [], replies)
    assert messages is not None
    assert [m["content"] for m in messages[:2]] == ["plain", '{"k": [1, 2]}']
    assert messages[2]["content"] == json.dumps(str(object))
    assert [m[TOOL_RECORD_KEY]["result"] for m in messages] == [
        "plain",
        {"k": [1, 2]},
        json.dumps(str(object)),
    ]
    assert env.respond(TASK, [], "no tool call") is None


def test_too_many_calls_in_one_reply() -> None:
    env = ToolUse(TOOLS, max_calls_per_turn=1)
    messages = env.respond(TASK, [], call("add", a=1, b=2) + call("add", a=3, b=4))
    assert messages is not None
    assert messages[0]["content"] == "3"
    assert "at most 1 tool calls" in json.loads(messages[1]["content"])["error"]


def test_start_adds_tool_instructions() -> None:
    chat = Task(
        id="t2",
        prompt=[
            ChatMessage(role="system", content="Be brief."),
            ChatMessage(role="user", content="hi"),
        ],
    )
    assert task_messages(chat) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]
    merged = ToolUse(TOOLS, system_prompt="Use tools.").start(chat)
    assert merged[0]["content"].startswith("Be brief.\n\nUse tools.\n\nYou can call tools.")
    assert merged[1] == {"role": "user", "content": "hi"}
    inserted = ToolUse(TOOLS, describe=False, system_prompt="Use tools.").start(TASK)
    assert inserted == [{"role": "system", "content": "Use tools."}, *USER]
    assert ToolUse(TOOLS, describe=False).start(TASK) == USER
    with pytest.raises(ValueError, match="max_turns"):
        ToolUse(TOOLS, max_turns=0)
