"""Autoregressive decoding with a KV cache, batched over the samples of one or more requests.

* One prefill per distinct prompt (left-padded to the longest when lengths differ), whose
  cache row is then repeated for every sample of that prompt. With a single prompt length
  no padding or attention mask is needed.
* Finished rows are dropped from the batch and from the cache; each request keeps its own
  ``max_tokens``, stop rules, sampling parameters and random generator.
* The logprob reported for a sampled token is ``log_softmax(logits)[token]`` at temperature 1,
  whatever temperature/top-k/top-p were used to pick it, so it equals what ``forward()``
  returns for that token. Each sequence also carries the token's logprob under the
  distribution it was actually drawn from (temperature, top-k and top-p applied; 0 for
  greedy), which ``record_stability_info`` keeps for ``stable_reinforce``.
* A temperature below ``types.GREEDY_BELOW`` is greedy (``SamplingParams.checked``).
* One request's draw failing (its own parameters, a listener) ends that request alone.
* Stop conditions: a stop token id is kept as the last output token; a stop string ends the
  sequence at the token that completes it, and that token is kept. ``stop=None`` means the
  model's EOS ids, ``stop=[]`` means only ``max_tokens``.
* On request, each token also carries the ``top_logprobs`` most likely tokens at its
  position (temperature 1), and ``on_token(sample, token, logprob, top)`` hears of each
  token as it is drawn (for streaming).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from rl_verifier import UserError
from rl_verifier_server.runtime.logprobs import token_logprobs
from rl_verifier_server.runtime.types import Cancelled, SampledSequence, SamplingParams

# on_token(sample, token, logprob, top): a token was drawn for sample ``sample``
OnToken = Callable[[int, int, float, list[tuple[int, float]]], None]


def choose(
    params: SamplingParams, logits: Tensor, generator: torch.Generator
) -> tuple[Tensor, Tensor]:
    """Next token per row of ``logits`` [B, V], and its logprob under the distribution it
    was drawn from. Top-p always keeps the most likely token (a ``top_p`` too small for
    float32 keeps only it)."""
    if params.temperature == 0:
        chosen = logits.argmax(dim=-1)
        return chosen, torch.zeros(chosen.shape, dtype=torch.float32, device=chosen.device)
    scaled = logits.float() / params.temperature
    vocab = scaled.shape[-1]
    if 0 < params.top_k < vocab:
        kth = torch.topk(scaled, params.top_k, dim=-1).values[:, -1:]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    if params.top_p < 1:
        ordered, order = scaled.sort(dim=-1, descending=True)
        probs = ordered.softmax(dim=-1)
        before = probs.cumsum(dim=-1) - probs  # mass of strictly more likely tokens
        beyond = before >= params.top_p
        beyond[:, 0] = False
        ordered = ordered.masked_fill(beyond, float("-inf"))
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


@dataclass
class DecodeRequest:
    """One request's share of a batch: ``num_samples`` continuations of ``prompt``
    (int64 [T] on the model's device), with its own limits, stop rules and generator.

    ``on_done`` hears the request's result as soon as its last row finishes (the rest of
    the batch may go on); ``cancelled`` is asked once per step."""

    prompt: Tensor
    num_samples: int
    max_tokens: int
    params: SamplingParams
    stop: StopCriteria
    generator: torch.Generator
    top_logprobs: int = 0
    on_token: OnToken | None = None
    on_done: Callable[[Decoded], None] | None = None
    cancelled: Callable[[], bool] | None = None


Decoded = list[SampledSequence] | Exception  # a request's sequences, or why it failed


class _Progress:
    """What one request has drawn so far, per sample."""

    def __init__(self, count: int) -> None:
        self.tokens: list[list[int]] = [[] for _ in range(count)]
        self.logprobs: list[list[float]] = [[] for _ in range(count)]
        self.drawn: list[list[float]] = [[] for _ in range(count)]
        self.tops: list[list[list[tuple[int, float]]]] = [[] for _ in range(count)]
        self.reasons = ["length"] * count
        self.live = count
        self.error: Exception | None = None

    def result(self) -> Decoded:
        if self.error is not None:
            return self.error
        parts = zip(self.tokens, self.logprobs, self.reasons, self.drawn, self.tops, strict=True)
        return [SampledSequence(t, lp, r, d, top) for t, lp, r, d, top in parts]


def generate(
    model: Any,
    requests: Sequence[DecodeRequest],
    last_logits_only: bool,
    cache_arg: str = "cache",
) -> list[Decoded]:
    """Decode every request in one batch; per request its sequences, or the exception that
    ended it (its ``on_token`` raised, or it was cancelled) without ending the others.

    Call under ``torch.inference_mode()`` with the wanted adapter active. ``cache_arg`` is
    the forward() keyword for the KV cache (``cache`` in transformers 5, else
    ``past_key_values``). Distinct prompts are prefilled once each, left-padded to the
    longest (positions count real tokens only); each prompt's cache row is then repeated
    for its samples. A request's random draws use only its own generator on its own rows,
    so a seeded request draws the same tokens in a batch as alone.
    """
    extra: dict[str, Any] = {"logits_to_keep": 1} if last_logits_only else {}
    cache, logits, mask = _prefill(model, requests, extra)
    positions = mask.sum(dim=-1, keepdim=True) - 1 if mask is not None else None
    owners = [r for r, req in enumerate(requests) for _ in range(req.num_samples)]
    samples = [s for req in requests for s in range(req.num_samples)]
    progress = [_Progress(req.num_samples) for req in requests]
    for step in range(max(req.max_tokens for req in requests)):
        for r, req in enumerate(requests):  # cancelled requests leave before the next step
            if progress[r].live and req.cancelled is not None and req.cancelled():
                _fail(req, progress[r], Cancelled("the request was cancelled"))
        spans = _spans(owners)
        chosen_parts: list[Tensor] = []
        drawn_parts: list[Tensor] = []
        tops: dict[int, list[list[tuple[int, float]]]] = {}
        for r, (start, end) in spans.items():
            req, rows = requests[r], logits[start:end]
            try:
                chosen_r, drawn_r = choose(req.params, rows, req.generator)
                best = _top(rows, req.top_logprobs)
            except Exception as exc:  # noqa: BLE001 - its own draw failed: it alone fails
                _fail(req, progress[r], exc)
                chosen_r = torch.zeros(end - start, dtype=torch.long, device=rows.device)
                drawn_r, best = torch.zeros(end - start, device=rows.device), None
            chosen_parts.append(chosen_r)
            drawn_parts.append(drawn_r)
            if best is not None:
                tops[r] = best
        chosen = torch.cat(chosen_parts) if len(chosen_parts) > 1 else chosen_parts[0]
        drawn = torch.cat(drawn_parts) if len(drawn_parts) > 1 else drawn_parts[0]
        chosen_lps = token_logprobs(logits, chosen)
        keep: list[int] = []
        steps = zip(chosen.tolist(), chosen_lps.tolist(), drawn.tolist(), strict=True)
        for j, (token, lp, drawn_lp) in enumerate(steps):
            r, sample = owners[j], samples[j]
            req, done = requests[r], progress[r]
            if done.error is not None:
                continue
            top = tops[r][j - spans[r][0]] if r in tops else []
            done.tokens[sample].append(token)
            done.logprobs[sample].append(lp)
            done.drawn[sample].append(drawn_lp)
            if r in tops:
                done.tops[sample].append(top)
            if req.on_token is not None:
                try:
                    req.on_token(sample, token, lp, top)
                except Exception as exc:  # noqa: BLE001 - its listener: this request alone fails
                    _fail(req, done, exc)
                    continue
            if req.stop.hit(done.tokens[sample]):
                done.reasons[sample] = "stop"
            elif step < req.max_tokens - 1:
                keep.append(j)
                continue
            done.live -= 1
            if done.live == 0 and req.on_done is not None:
                req.on_done(done.result())
        keep = [j for j in keep if progress[owners[j]].error is None]
        if not keep:
            break
        if len(keep) < len(owners):
            index = torch.tensor(keep, device=chosen.device)
            cache.batch_select_indices(index)
            chosen = chosen[index]
            if mask is not None and positions is not None:
                mask, positions = mask[index], positions[index]
            owners = [owners[j] for j in keep]
            samples = [samples[j] for j in keep]
        step_args: dict[str, Any] = {cache_arg: cache}
        if mask is not None and positions is not None:
            mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=-1)
            positions = positions + 1
            step_args |= {"attention_mask": mask, "position_ids": positions}
        out = model(input_ids=chosen[:, None], use_cache=True, **step_args)
        cache = _cache_of(out)
        logits = out.logits[:, -1, :]
    return [done.result() for done in progress]


def _prefill(
    model: Any, requests: Sequence[DecodeRequest], extra: dict[str, Any]
) -> tuple[Any, Tensor, Tensor | None]:
    """One forward over the distinct prompts, its cache and last logits repeated into one
    row per sample (in request order); the attention mask when prompts were padded."""
    distinct: dict[tuple[int, ...], int] = {}
    keys = [tuple(req.prompt.tolist()) for req in requests]
    for key in keys:
        distinct.setdefault(key, len(distinct))
    prompts = [requests[keys.index(key)].prompt for key in distinct]
    longest = max(len(p) for p in prompts)
    mask: Tensor | None = None
    if all(len(p) == longest for p in prompts):
        out = model(input_ids=torch.stack(prompts), use_cache=True, **extra)
    else:
        ids = prompts[0].new_zeros((len(prompts), longest))
        mask = prompts[0].new_zeros((len(prompts), longest))
        for row, prompt in enumerate(prompts):
            ids[row, longest - len(prompt) :] = prompt
            mask[row, longest - len(prompt) :] = 1
        positions = (mask.cumsum(dim=-1) - 1).clamp(min=0)
        out = model(
            input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, **extra
        )
    cache = _cache_of(out)
    logits = out.logits[:, -1, :]
    rows = [distinct[key] for key, req in zip(keys, requests, strict=True)
            for _ in range(req.num_samples)]  # fmt: skip
    if len(prompts) == 1:
        if len(rows) > 1:
            cache.batch_repeat_interleave(len(rows))
            logits = logits.expand(len(rows), -1)
    else:
        index = torch.tensor(rows, device=logits.device)
        cache.batch_select_indices(index)
        logits = logits[index]
        if mask is not None:
            mask = mask[index]
    return cache, logits, mask


def _spans(owners: list[int]) -> dict[int, tuple[int, int]]:
    """Per request, its consecutive rows [start, end) in the batch."""
    spans: dict[int, tuple[int, int]] = {}
    for j, r in enumerate(owners):
        start = spans[r][0] if r in spans else j
        spans[r] = (start, j + 1)
    return spans


def _fail(req: DecodeRequest, progress: _Progress, error: Exception) -> None:
    progress.error = error
    progress.live = 0
    if req.on_done is not None:
        req.on_done(error)


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
