"""Environments: how one episode for a task unfolds, single-turn or multi-turn with tools.

:func:`run_episode` drives an :class:`Environment` with a ``sample`` coroutine supplied by the
training loop and records the token segments that :func:`~rl_verifier.train.packing.pack`
turns into a datum: the prompt (not sampled), each sampled turn with its logprobs, and between
turns the tokens the environment inserts (tool results and the next generation prompt), which
are not sampled and so get no loss.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from rl_verifier.base.contracts import Task
from rl_verifier.parsing.toolcalls import ToolCall, parse_tool_calls
from rl_verifier.train.packing import Segment
from rl_verifier.train.renderer import Renderer

# A tool message may carry its call record under this key; run_episode moves it into
# Episode.tool_calls and removes it before the message is rendered or kept.
TOOL_RECORD_KEY = "_tool_call"

EndReason = Literal["done", "max_turns", "max_context"]


@dataclass
class Turn:
    """One model turn: the sampled token ids, their sampler logprobs and the reply text."""

    sampled: list[int]
    logprobs: list[float]
    text: str


@dataclass
class Episode:
    """What happened in one episode, for packing, scoring and logs."""

    segments: list[Segment]
    messages: list[dict[str, Any]]
    final_text: str
    turns: int
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    end_reason: EndReason = "done"
    prompt_messages: int = 0  # how many of ``messages`` opened the episode

    @property
    def reply(self) -> list[dict[str, Any]]:
        """The messages after the prompt: what the verifier judges."""
        return self.messages[self.prompt_messages :]


class Environment(Protocol):
    """How an episode unfolds: the opening messages, then the response to each reply."""

    name: str
    max_turns: int

    def start(self, task: Task) -> list[dict[str, Any]]:
        """The initial chat messages for ``task``."""
        ...

    def respond(
        self, task: Task, messages: list[dict[str, Any]], reply: str
    ) -> list[dict[str, Any]] | None:
        """None when the episode is over, else the messages to append before the next turn.

        ``messages`` already ends with the assistant ``reply``. A returned message may carry
        a record for Episode.tool_calls under :data:`TOOL_RECORD_KEY`.
        """
        ...


def task_messages(task: Task) -> list[dict[str, Any]]:
    """The task's prompt as chat messages; a plain string is one user message."""
    if isinstance(task.prompt, str):
        return [{"role": "user", "content": task.prompt}]
    return [message.model_dump() for message in task.prompt]


class SingleTurn:
    """Prompt, one completion, done."""

    name = "single_turn"
    max_turns = 1

    def start(self, task: Task) -> list[dict[str, Any]]:
        """The task's prompt as chat messages."""
        return task_messages(task)

    def respond(
        self, task: Task, messages: list[dict[str, Any]], reply: str
    ) -> list[dict[str, Any]] | None:
        """Always over after the first reply."""
        return None


# --------------------------------------------------------------------------------------------
# Tool calls


def describe_tools(tools: Mapping[str, Callable[..., Any]]) -> str:
    """A system-prompt paragraph: the call format and each tool's signature and summary."""
    lines = [
        "You can call tools. To call one, write",
        '<tool_call>{"name": "<tool name>", "arguments": {<arguments as JSON>}}</tool_call>',
        "You may make several calls in one reply; each result comes back in a tool message. "
        "When you have the final answer, reply without any tool call.",
        "Tools:",
    ]
    for name, fn in tools.items():
        signature = _signature(fn)
        doc = (inspect.getdoc(fn) or "").strip().splitlines()
        summary = f": {doc[0]}" if doc else ""
        lines.append(f"- {name}{signature}{summary}")
    return "\n".join(lines)


def _signature(fn: Callable[..., Any]) -> str:
    try:
        return str(inspect.signature(fn, eval_str=True))
    except (NameError, SyntaxError, TypeError, ValueError):
        try:
            return str(inspect.signature(fn))
        except (TypeError, ValueError):
            return "(...)"


class ToolUse:
    """Multi-turn with tools: each reply's tool calls are run and their results sent back.

    The episode ends when a reply has no tool call or after ``max_turns`` model turns. A tool
    is called as ``tool(**arguments)``; a string result is sent as is, anything else as JSON.
    Exceptions, unknown tool names and unparsable calls become ``{"error": ...}`` results that
    the model sees; they never end the episode. At most ``max_calls_per_turn`` calls of one
    reply are run, later ones get an error result. The system prompt is ``system_prompt``
    followed (when ``describe`` is true) by :func:`describe_tools`; it is added to a leading
    system message of the task, or inserted as one.
    """

    name = "tool_use"

    def __init__(
        self,
        tools: Mapping[str, Callable[..., Any]],
        max_turns: int = 4,
        system_prompt: str | None = None,
        describe: bool = True,
        max_calls_per_turn: int = 8,
    ) -> None:
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        if max_calls_per_turn < 1:
            raise ValueError(f"max_calls_per_turn must be at least 1, got {max_calls_per_turn}")
        self.tools = dict(tools)
        self.max_turns = max_turns
        self.system_prompt = system_prompt
        self.describe = describe
        self.max_calls_per_turn = max_calls_per_turn

    def start(self, task: Task) -> list[dict[str, Any]]:
        """The task's messages with the tool instructions in the system message."""
        messages = task_messages(task)
        parts = [self.system_prompt or "", describe_tools(self.tools) if self.describe else ""]
        system = "\n\n".join(p for p in parts if p)
        if not system:
            return messages
        first = messages[0] if messages else None
        if first is not None and first.get("role") == "system":
            if isinstance(first.get("content"), str) and first["content"]:
                system = f"{first['content']}\n\n{system}"
            messages[0] = {**first, "content": system}
        else:
            messages.insert(0, {"role": "system", "content": system})
        return messages

    def respond(
        self, task: Task, messages: list[dict[str, Any]], reply: str
    ) -> list[dict[str, Any]] | None:
        """One tool message per call in ``reply``; None when it has no call."""
        calls = parse_tool_calls(reply)
        if not calls:
            return None
        results: list[dict[str, Any]] = []
        for index, call in enumerate(calls):
            if index >= self.max_calls_per_turn:
                call = ToolCall(
                    call.name,
                    call.arguments,
                    f"not run: at most {self.max_calls_per_turn} tool calls per reply",
                )
            record, content = self.call(call)
            message: dict[str, Any] = {"role": "tool", "content": content}
            if call.name is not None:
                message["name"] = call.name
            message[TOOL_RECORD_KEY] = record
            results.append(message)
        return results

    def call(self, call: ToolCall) -> tuple[dict[str, Any], str]:
        """Run one call: its record (name, arguments, result or error) and message content."""
        record: dict[str, Any] = {"name": call.name, "arguments": call.arguments}
        error = call.error
        result: Any = None
        if error is None:
            assert call.name is not None  # parsed calls without an error have a name
            tool = self.tools.get(call.name)
            if tool is None:
                known = ", ".join(sorted(self.tools)) or "none"
                error = f"unknown tool {call.name!r}; available tools: {known}"
            else:
                try:
                    result = tool(**call.arguments)
                except Exception as exc:  # noqa: BLE001 - a tool failure is the model's feedback
                    error = f"{type(exc).__name__}: {exc}"
                else:
                    if inspect.isawaitable(result):
                        if inspect.iscoroutine(result):
                            result.close()
                        error = "tool returned an awaitable; async tools are not supported"
        if error is not None:
            record["error"] = error
            return record, json.dumps({"error": error}, ensure_ascii=False)
        content = _content(result)
        record["result"] = result if _is_json(result) else content
        return record, content


def _content(result: Any) -> str:
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(result)


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


# --------------------------------------------------------------------------------------------
# Episodes


SampleTurns = Callable[[list[int], int, int], Awaitable[list[Turn]]]
"""``sample(prompt_tokens, count, stream)``: ``count`` independent turns; ``stream``
tells apart the calls of one group (0: the group's shared first turn)."""


async def run_group(
    env: Environment,
    task: Task,
    renderer: Renderer,
    sample: SampleTurns,
    size: int,
    max_context: int,
) -> list[Episode]:
    """``size`` episodes of ``env`` on ``task``, their first turns sampled in one request
    (they share the prompt: ``env.start`` is called once per group), each later turn in a
    request of its own."""
    opening = list(env.start(task))
    prompt = opening_prompt(opening, task, renderer, max_context)
    firsts = await sample(prompt, size, 0)

    async def one(index: int, first: Turn) -> Episode:
        async def next_turn(tokens: list[int]) -> Turn:
            [turn] = await sample(tokens, 1, index + 1)
            return turn

        return await run_episode(
            env, task, renderer, next_turn, max_context, first=first, opening=opening
        )

    return list(await asyncio.gather(*(one(i, turn) for i, turn in enumerate(firsts))))


def opening_prompt(
    messages: list[dict[str, Any]], task: Task, renderer: Renderer, max_context: int
) -> list[int]:
    """The tokens of an episode's opening ``messages``; ValueError when they leave no room
    to sample."""
    prompt = renderer.prompt_tokens(messages)
    if len(prompt) >= max_context:
        raise ValueError(
            f"task {task.id!r}: prompt of {len(prompt)} tokens leaves no room in "
            f"max_context {max_context}"
        )
    return prompt


async def run_episode(
    env: Environment,
    task: Task,
    renderer: Renderer,
    sample: Callable[[list[int]], Awaitable[Turn]],
    max_context: int,
    first: Turn | None = None,
    opening: list[dict[str, Any]] | None = None,
) -> Episode:
    """Run one episode of ``env`` on ``task``.

    ``sample(prompt_tokens)`` returns the model's next turn (``first``, when given, is the
    first turn, already sampled from ``opening``, the messages ``env.start(task)`` gave;
    without ``opening`` the episode calls ``env.start`` itself). The episode ends when the
    environment says so (``end_reason="done"``), after ``env.max_turns`` turns
    (``"max_turns"``; the last reply's tool calls are then not run, and a single-turn
    environment always ends this way), or when the next prompt would leave no room to sample
    within ``max_context`` tokens (``"max_context"``; that turn's tool results are recorded in
    ``tool_calls`` but not added to the chat). ``env.respond`` runs in a worker thread so that
    slow tools do not block other episodes. Raises ValueError when the first prompt already
    fills ``max_context``, when a turn's logprobs do not match its tokens, or when the chat
    template is not prefix-consistent (see :mod:`rl_verifier.train.renderer`).
    """
    messages = [dict(m) for m in (env.start(task) if opening is None else opening)]
    opened = len(messages)
    prompt = opening_prompt(messages, task, renderer, max_context)
    segments = [Segment(list(prompt), sampled=False)]
    tokens = list(prompt)
    tool_calls: list[dict[str, Any]] = []
    final_text = ""
    turns = 0
    end_reason: EndReason = "done"
    while True:
        turn = first if first is not None and turns == 0 else await sample(list(tokens))
        turns += 1
        if len(turn.logprobs) != len(turn.sampled):
            raise ValueError(
                f"sampled turn has {len(turn.sampled)} tokens but {len(turn.logprobs)} logprobs"
            )
        segments.append(Segment(list(turn.sampled), sampled=True, logprobs=list(turn.logprobs)))
        history = list(messages)
        messages.append({"role": "assistant", "content": turn.text})
        final_text = turn.text
        tokens.extend(turn.sampled)
        if turns >= env.max_turns:
            end_reason = "max_turns"
            break
        new = await asyncio.to_thread(env.respond, task, list(messages), turn.text)
        if new is None:
            break
        inserted: list[dict[str, Any]] = []
        for message in new:
            message = dict(message)
            record = message.pop(TOOL_RECORD_KEY, None)
            if record is not None:
                tool_calls.append(record)
            inserted.append(message)
        continuation = renderer.continuation_tokens(history, turn.sampled, inserted)
        if len(tokens) + len(continuation) >= max_context:
            end_reason = "max_context"
            break
        messages.extend(inserted)
        segments.append(Segment(continuation, sampled=False))
        tokens.extend(continuation)
    return Episode(
        segments=segments,
        messages=messages,
        final_text=final_text,
        turns=turns,
        tool_calls=tool_calls,
        end_reason=end_reason,
        prompt_messages=opened,
    )
