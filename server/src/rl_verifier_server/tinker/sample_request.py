"""The sampling part of an ``asample`` request, every parameter checked into its range
(against the server's limits) before the request joins a batch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rl_verifier import UserError
from rl_verifier_server.base import fields
from rl_verifier_server.base.limits import ServerLimits
from rl_verifier_server.runtime.types import SamplingParams

UNSUPPORTED = ("topk_prompt_logprobs", "topk_sample_logprobs", "prompt_alt_tokens_k")


@dataclass(frozen=True)
class SampleCall:
    tokens: list[int]
    num_samples: int
    max_tokens: int
    params: SamplingParams  # temperature (a tiny one is greedy), top_p, top_k
    seed: int | None
    stop: str | list[str] | list[int] | None
    prompt_logprobs: bool
    record_stability_info: bool

    @classmethod
    def parse(cls, request: dict[str, Any], limits: ServerLimits) -> SampleCall:
        count = fields.integer(request, "num_samples", 1)
        if not 1 <= count <= limits.max_num_samples:
            raise UserError(
                f"num_samples must be between 1 and {limits.max_num_samples}, this "
                f"server's limit (rlv serve --max-num-samples), got {count}"
            )
        for key in UNSUPPORTED:
            if request.get(key):
                raise UserError(f"'{key}' is not supported by rlv serve")
        if request.get("target_prompt_logprobs") is not None:
            raise UserError("'target_prompt_logprobs' is not supported by rlv serve")
        params = fields.mapping(request, "sampling_params")
        max_tokens = fields.integer(params, "max_tokens", 16)
        if not 1 <= max_tokens <= limits.max_tokens:
            raise UserError(
                f"max_tokens must be between 1 and {limits.max_tokens}, this server's "
                f"limit (rlv serve --max-tokens), got {max_tokens}"
            )
        return cls(
            tokens=fields.prompt_tokens(fields.mapping(request, "prompt")),
            num_samples=count,
            max_tokens=max_tokens,
            params=SamplingParams.checked(
                fields.number(params, "temperature", 1.0),
                fields.number(params, "top_p", 1.0),
                fields.integer(params, "top_k", -1),
            ),
            seed=fields.integer(params, "seed", None),
            stop=fields.stop_condition(params.get("stop")),
            prompt_logprobs=fields.flag(request, "prompt_logprobs", False),
            record_stability_info=fields.flag(request, "record_stability_info", False),
        )
