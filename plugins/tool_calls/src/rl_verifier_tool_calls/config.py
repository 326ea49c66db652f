"""Settings of the ``tool_calls`` verifier."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rl_verifier.verifier import VerifierConfig
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
    cite_pattern: str = Field(
        default=DEFAULT_CITE_PATTERN,
        description="Regex of a citation; group 1 holds one id or a comma-separated list.",
    )
    answer_pattern: str = Field(
        default=r"<answer>(.*?)</answer>",
        description="Regex whose group 1 is the answer; the whole final turn when no match.",
    )

    @field_validator("cite_pattern", "answer_pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        re.compile(value)
        return value

    @model_validator(mode="after")
    def _target_within_max(self) -> ToolCallsConfig:
        if self.target_calls > max(self.max_calls, 1):
            raise ValueError("target_calls must not exceed max_calls")
        return self
