"""Settings of the ``tool_calls`` verifier."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rl_verifier import Regex, VerifierConfig
from rl_verifier_tool_calls.citations import DEFAULT_CITE_PATTERN


class Weights(BaseModel):
    """R = answer·A + citation·C + legality·L + thrift·T·A - fabricated·F."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    answer: float = Field(default=0.6, ge=0, description="A: the final answer is correct.")
    citation: float = Field(
        default=0.2, ge=0, description="C: citations name ids that a tool reply returned."
    )
    legality: float = Field(
        default=0.1, ge=0, description="L: calls name known tools with schema-valid arguments."
    )
    thrift: float = Field(
        default=0.1, ge=0, description="T: few calls (up to target_calls), paid only with A."
    )
    fabricated: float = Field(
        default=0.5, ge=0, description="F: penalty for a <tool_response> the model wrote itself."
    )


class BfclSettings(BaseModel):
    """How BFCL mode reads replies; ``parallel_any_order`` and ``unwrap_code_fence`` depart
    from BFCL and are off by default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model_kind: Literal["prompt", "function_calling"] = Field(
        default="prompt",
        description="prompt: calls are read from the reply's text (Python, Java or JavaScript "
        "call syntax); function_calling: from its tool calls (OpenAI tool_calls or "
        "<tool_call> blocks).",
    )
    function_names: Literal["auto", "dotted", "underscored"] = Field(
        default="auto",
        description="How a dotted declared name (math.factorial) must be written: dotted, or "
        "underscored (math_factorial; BFCL's underscore_to_dot, set for models whose API "
        "forbids dots). auto: dotted for prompt models, underscored for function-calling ones.",
    )
    return_format: Literal["python", "json"] = Field(
        default="python",
        description="Prompt models, Python categories: python for [f(a=1)], json for BFCL's "
        'JSON [{"function": "f", "parameters": {"a": 1}}].',
    )
    parallel_any_order: bool = Field(
        default=False,
        description="Departure from BFCL: match parallel calls by any one-to-one pairing "
        "instead of BFCL's in-order greedy matching.",
    )
    unwrap_code_fence: bool = Field(
        default=False,
        description="Departure from BFCL: read prompt-model text inside a ```lang code fence.",
    )

    @property
    def underscored(self) -> bool:
        """Whether dotted declared names must be written with underscores."""
        if self.function_names == "auto":
            return self.model_kind == "function_calling"
        return self.function_names == "underscored"


class ToolCallsConfig(VerifierConfig):
    """Settings of the ``tool_calls`` verifier."""

    mode: Literal["trajectory", "bfcl"] = Field(
        default="trajectory",
        description="trajectory: score a tool-use episode; bfcl: BFCL AST check of calls.",
    )
    tools: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Tools known to every task, added to those the task declares.",
    )
    max_calls: int = Field(default=4, ge=0, description="More calls than this score 0.")
    target_calls: int = Field(default=2, ge=1, description="Calls allowed before thrift drops.")
    weights: Weights = Field(default_factory=Weights, description="Weights of the reward.")
    bfcl: BfclSettings = Field(
        default_factory=BfclSettings, description="How BFCL mode reads and matches calls."
    )
    cite_pattern: Regex = Field(
        default=DEFAULT_CITE_PATTERN,
        description="Regex of a citation; group 1 holds one id or a comma-separated list.",
    )
    answer_pattern: Regex = Field(
        default=r"<answer>(.*?)</answer>",
        description="Regex whose group 1 is the answer; the whole final turn when no match.",
    )

    @model_validator(mode="after")
    def _target_within_max(self) -> ToolCallsConfig:
        if self.target_calls > max(self.max_calls, 1):
            raise ValueError("target_calls must not exceed max_calls")
        return self
