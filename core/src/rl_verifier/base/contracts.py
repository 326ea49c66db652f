"""Data contracts shared by every package: tasks, completions, verdicts and scores."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
)

JsonDict = dict[str, Any]

TASKSET_PREFIX = "taskset:"  # a task source naming a plugin's task set: taskset:NAME


def task_set_name(source: str) -> str | None:
    """The task set a task source names (``taskset:NAME``), or None for a path."""
    return source.removeprefix(TASKSET_PREFIX) if source.startswith(TASKSET_PREFIX) else None


class ChatMessage(BaseModel):
    """One chat turn. Extra keys (tool_calls, name, ...) are kept as they are."""

    model_config = ConfigDict(extra="allow")

    role: str
    content: Any = None


def _text_kind(value: Any) -> str | None:
    if isinstance(value, str):
        return "text"
    return "chat" if isinstance(value, list) else None


Text = Annotated[
    Annotated[str, Tag("text")] | Annotated[list[ChatMessage], Tag("chat")],
    Discriminator(
        _text_kind,
        custom_error_type="text_or_chat",
        custom_error_message="expected a string or a list of chat messages ({role, content})",
    ),
]


def _integer_as_text(value: Any) -> Any:
    """Data dumps often carry numeric ids; ``7`` and ``"7"`` name the same task."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


Id = Annotated[str, BeforeValidator(_integer_as_text)]


class Task(BaseModel):
    """A prompt plus what the verifier needs to judge answers to it."""

    model_config = ConfigDict(extra="forbid")

    id: Id
    prompt: Text
    verifier: str | None = None
    reference: JsonDict = Field(default_factory=dict)
    metadata: JsonDict = Field(default_factory=dict)


class Completion(BaseModel):
    """One model output for a task."""

    model_config = ConfigDict(extra="forbid")

    task_id: Id
    completion: Text

    def text(self) -> str:
        """The completion as plain text: the last assistant turn of a chat."""
        return completion_text(self.completion)


def completion_text(value: Text) -> str:
    """Plain text of a completion; for a chat, the content of the last assistant turn."""
    if isinstance(value, str):
        return value
    for message in reversed(value):
        if message.role == "assistant":
            return content_text(message.content)
    return ""


def content_text(content: Any) -> str:
    """Text of a message's content: a string, or the text parts of a parts list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "".join(p for p in parts if isinstance(p, str))
    return ""


class Status(StrEnum):
    """Outcome of one verification.

    ``ok``: the verifier judged the output (right or wrong). ``invalid``: the output
    could not be used (a policy failure). ``timeout`` and ``error``: the check itself
    did not complete; these are never to be read as wrong answers.
    """

    OK = "ok"
    INVALID = "invalid"
    TIMEOUT = "timeout"
    ERROR = "error"

    @property
    def judged(self) -> bool:
        """Whether the verifier reached a judgement about the model's output."""
        return self in (Status.OK, Status.INVALID)


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(f"reward must be finite, got {value}")
    return value


RewardValue = Annotated[float, AfterValidator(_finite)]
"""A reward: a finite float (NaN and infinities are refused)."""

# Worst first: the status a composite reward takes when its parts disagree.
STATUS_SEVERITY = {Status.ERROR: 3, Status.TIMEOUT: 2, Status.INVALID: 1, Status.OK: 0}


class Verdict(BaseModel):
    """What a verifier returns for one sample; the engine turns it into a ``Score``."""

    model_config = ConfigDict(extra="forbid")

    status: Status = Status.OK
    reward: RewardValue = 0.0
    components: dict[str, float] = Field(default_factory=dict)
    info: JsonDict = Field(default_factory=dict)
    error: str | None = None

    @classmethod
    def ok(
        cls,
        reward: float,
        components: dict[str, float] | None = None,
        **info: Any,
    ) -> Verdict:
        """A judged sample with its reward."""
        return cls._validated({"reward": reward, "components": components or {}, "info": info})

    @classmethod
    def judged(cls, reward: float, components: dict[str, float], info: JsonDict) -> Verdict:
        """What ``ok`` gives, from an info dict already built: the cheapest way to build a
        verdict, for a verifier's hot path (validated as the constructor validates, without
        its Python frame or a second call)."""
        data = {"reward": reward, "components": components, "info": info}
        verdict: Verdict = cls.__pydantic_validator__.validate_python(data)
        return verdict

    @classmethod
    def invalid(cls, reason: str, **info: Any) -> Verdict:
        """The output is unusable; the engine applies the configured invalid penalty."""
        return cls._validated({"status": Status.INVALID, "error": reason, "info": info})

    @classmethod
    def errored(cls, message: str, **info: Any) -> Verdict:
        """Status ``error``: the verifier or its infrastructure failed, never a judgement
        of the model."""
        return cls._validated({"status": Status.ERROR, "error": message, "info": info})

    @classmethod
    def _validated(cls, data: JsonDict) -> Verdict:
        # Validated as the constructor validates, without its Python frame (about a fifth
        # of the cost of building a verdict).
        verdict: Verdict = cls.__pydantic_validator__.validate_python(data)
        return verdict

    @classmethod
    def failed(cls, message: str, **info: Any) -> Verdict:
        """Deprecated name of ``errored`` (it yields status ``error``, not a failed check)."""
        warnings.warn(
            "Verdict.failed is deprecated: use Verdict.errored", DeprecationWarning, stacklevel=2
        )
        return cls.errored(message, **info)


class VerifierRef(BaseModel):
    """Provenance of a score: which verifier, which release, which settings."""

    name: str
    version: str
    config_hash: str


class Score(BaseModel):
    """One scored completion, as written to a scores JSONL file."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    sample_index: int
    reward: RewardValue
    status: Status
    components: dict[str, float] = Field(default_factory=dict)
    verifier: VerifierRef
    elapsed_s: float
    info: JsonDict = Field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class Sample:
    """One completion to score, with its 0-based position among its task's completions."""

    task: Task
    completion: Completion
    index: int
