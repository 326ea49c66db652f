"""Autoregressive decoding with a KV cache, batched over ``num_samples`` of one prompt.

* One prefill of the prompt (batch 1), whose cache is then repeated for every sample, so all
  rows share the same positions and no padding or attention mask is needed.
* Finished rows are dropped from the batch and from the cache.
* The logprob reported for a sampled token is ``log_softmax(logits)[token]`` at temperature 1,
  whatever temperature/top-k/top-p were used to pick it, so it equals what ``forward()``
  returns for that token. Each sequence also carries the token's logprob under the
  distribution it was actually drawn from (temperature, top-k and top-p applied; 0 for
  greedy), which ``record_stability_info`` keeps for ``stable_reinforce``.
* Stop conditions: a stop token id is kept as the last output token; a stop string ends the
  sequence at the token that completes it, and that token is kept. ``stop=None`` means the
  model's EOS ids, ``stop=[]`` means only ``max_tokens``.
* On request, each token also carries the ``top_logprobs`` most likely tokens at its
  position (temperature 1), and ``on_token(sample, token, logprob, top)`` hears of each
  token as it is drawn (for streaming).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from rl_verifier import UserError
from rl_verifier_server.runtime.logprobs import token_logprobs
from rl_verifier_server.runtime.types import SampledSequence

# on_token(sample, token, logprob, top): a token was drawn for sample ``sample``
OnToken = Callable[[int, int, float, list[tuple[int, float]]], None]


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1

    def validate(self) -> None:
        if not (math.isfinite(self.temperature) and self.temperature >= 0):
            raise UserError(f"temperature must be >= 0, got {self.temperature}")
        if not (0 < self.top_p <= 1):
            raise UserError(f"top_p must be in (0, 1], got {self.top_p}")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int):
            raise UserError(f"top_k must be an integer (-1 = off), got {self.top_k!r}")

    def choose(self, logits: Tensor, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """Next token per row of ``logits`` [B, V], and its logprob under the distribution
        it was drawn from."""
        if self.temperature == 0:
            chosen = logits.argmax(dim=-1)
            return chosen, torch.zeros(chosen.shape, dtype=torch.float32, device=chosen.device)
        scaled = logits.float() / self.temperature
        vocab = scaled.shape[-1]
        if 0 < self.top_k < vocab:
            kth = torch.topk(scaled, self.top_k, dim=-1).values[:, -1:]
            scaled = scaled.masked_fill(scaled < kth, float("-inf"))
        if self.top_p < 1:
            ordered, order = scaled.sort(dim=-1, descending=True)
            probs = ordered.softmax(dim=-1)
            before = probs.cumsum(dim=-1) - probs  # mass of strictly more likely tokens
            ordered = ordered.masked_fill(before >= self.top_p, float("-inf"))
            scaled = torch.full_like(scaled, float("-inf")).scatter(-1, order, ordered)
        probs = scaled.softmax(dim=-1)
        chosen = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        drawn = scaled.log_softmax(dim=-1).gather(-1, chosen[:, None])[:, 0]
        return chosen, drawn


class StopCriteria:
    """Decides, after each new token, whether a sequence is done."""

    def __init__(self, token_ids: set[int], strings: list[str], tokenizer: Any) -> None:
        self.token_ids = token_ids
        self.strings = strings
        self.tokenizer = tokenizer
        # Tokens decode to at least one character, so a stop string of L characters is
        # always inside the last 2L + 8 tokens (the margin keeps leading-space handling of
        # the decoded window away from the match).
        self.window = 2 * max((len(s) for s in strings), default=0) + 8

    @classmethod
    def parse(
        cls, stop: Sequence[str] | Sequence[int] | str | None, eos_ids: set[int], tokenizer: Any
    ) -> StopCriteria:
        if stop is None:
            return cls(set(eos_ids), [], tokenizer)
        if isinstance(stop, str):
            stop = [stop]
        items: list[object] = list(stop)
        strings = [s for s in items if isinstance(s, str)]
        ids = [s for s in items if isinstance(s, int) and not isinstance(s, bool)]
        if len(strings) == len(items):  # includes stop=[]: no stop condition at all
            if any(not s for s in strings):
                raise UserError("stop strings must not be empty")
            return cls(set(), strings, tokenizer)
        if len(ids) == len(items):
            if any(i < 0 for i in ids):
                raise UserError(f"stop token ids must be >= 0, got {sorted(ids)}")
            return cls(set(ids), [], tokenizer)
        raise UserError("stop must be a list of strings or a list of token ids, not a mix")

    def hit(self, completion: list[int]) -> bool:
        if completion[-1] in self.token_ids:
            return True
        if not self.strings:
            return False
        tail = self.tokenizer.decode(completion[-self.window :], skip_special_tokens=False)
        return any(s in tail for s in self.strings)


def make_generator(device: torch.device, seed: int | None) -> torch.Generator:
    generator = torch.Generator(device=device)
    generator.manual_seed(secrets.randbits(63) if seed is None else int(seed) & (2**64 - 1))
    return generator


def generate(
    model: Any,
    prompt: Tensor,
    num_samples: int,
    max_tokens: int,
    params: SamplingParams,
    stop: StopCriteria,
    generator: torch.Generator,
    last_logits_only: bool,
    cache_arg: str = "cache",
    top_logprobs: int = 0,
    on_token: OnToken | None = None,
) -> list[SampledSequence]:
    """Sample ``num_samples`` continuations of ``prompt`` (int64 [T] on the model's device).

    Call under ``torch.inference_mode()`` with the wanted adapter active. ``cache_arg`` is
    the forward() keyword for the KV cache (``cache`` in transformers 5, else
    ``past_key_values``).
    """
    extra = {"logits_to_keep": 1} if last_logits_only else {}
    out = model(input_ids=prompt[None], use_cache=True, **extra)
    cache = _cache_of(out)
    logits = out.logits[:, -1, :]
    if num_samples > 1:
        cache.batch_repeat_interleave(num_samples)
        logits = logits.expand(num_samples, -1)
    rows = list(range(num_samples))  # cache row -> sample index
    tokens: list[list[int]] = [[] for _ in rows]
    logprobs: list[list[float]] = [[] for _ in rows]
    drawn_logprobs: list[list[float]] = [[] for _ in rows]
    tops: list[list[list[tuple[int, float]]]] = [[] for _ in rows]
    reasons = ["length"] * num_samples
    for step in range(max_tokens):
        chosen, drawn = params.choose(logits, generator)
        chosen_lps = token_logprobs(logits, chosen)
        keep: list[int] = []
        steps = zip(chosen.tolist(), chosen_lps.tolist(), drawn.tolist(), strict=True)
        best = _top(logits, top_logprobs)
        for j, (token, lp, drawn_lp) in enumerate(steps):
            sample = rows[j]
            tokens[sample].append(token)
            logprobs[sample].append(lp)
            drawn_logprobs[sample].append(drawn_lp)
            if best is not None:
                tops[sample].append(best[j])
            if on_token is not None:
                on_token(sample, token, lp, best[j] if best is not None else [])
            if stop.hit(tokens[sample]):
                reasons[sample] = "stop"
            else:
                keep.append(j)
        if not keep or step == max_tokens - 1:
            break
        if len(keep) < len(rows):
            index = torch.tensor(keep, device=chosen.device)
            cache.batch_select_indices(index)
            chosen = chosen[index]
            rows = [rows[j] for j in keep]
        out = model(input_ids=chosen[:, None], use_cache=True, **{cache_arg: cache})
        cache = _cache_of(out)
        logits = out.logits[:, -1, :]
    return [
        SampledSequence(t, lp, r, d, top)
        for t, lp, r, d, top in zip(tokens, logprobs, reasons, drawn_logprobs, tops, strict=True)
    ]


def _top(logits: Tensor, count: int) -> list[list[tuple[int, float]]] | None:
    """Per row, the ``count`` most likely tokens with their logprobs (None for 0)."""
    if count <= 0:
        return None
    values, ids = torch.log_softmax(logits.float(), dim=-1).topk(count, dim=-1)
    rows = zip(ids.tolist(), values.tolist(), strict=True)
    return [list(zip(i, v, strict=True)) for i, v in rows]


def _cache_of(output: Any) -> Any:
    """The KV cache of a model output, under its transformers 5 or 4 name."""
    return output["cache"] if "cache" in output else output["past_key_values"]
