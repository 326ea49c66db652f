"""Sampling on one model, from a sampler snapshot or the bare base model: requests are
checked against the model's vocabulary and context (``prepare``), then decoded, alone or
batched with others on the same sampler (``run``), through ``decoding``."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from rl_verifier import UserError
from rl_verifier_server.base.fields import shown
from rl_verifier_server.runtime.datums import check_tokens
from rl_verifier_server.runtime.decoding import (
    Decoded,
    DecodeRequest,
    OnToken,
    StopCriteria,
    generate,
    make_generator,
)
from rl_verifier_server.runtime.loaded_model import LoadedModel
from rl_verifier_server.runtime.logprobs import token_logprobs
from rl_verifier_server.runtime.snapshots import SnapshotCache
from rl_verifier_server.runtime.types import SampledSequence, SamplingParams


class Sampling:
    """``sample`` and ``prompt_logprobs`` by sampler id (None: the base model). A snapshot
    is made resident only once the request has passed its checks."""

    def __init__(self, base: LoadedModel, snapshots: SnapshotCache) -> None:
        self.base = base
        self.snapshots = snapshots

    def sample(
        self,
        sampler_id: str | None,
        prompt: list[int],
        num_samples: int,
        max_tokens: int | None,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = -1,
        stop: Sequence[str] | Sequence[int] | str | None = None,
        seed: int | None = None,
        *,
        stop_at_eos: bool = False,
        top_logprobs: int = 0,
        on_token: OnToken | None = None,
    ) -> list[SampledSequence]:
        """``num_samples`` continuations of ``prompt``, alone (see ``prepare`` and ``run``)."""
        request = self.prepare(
            prompt, num_samples, max_tokens, temperature, top_p, top_k, stop, seed,
            stop_at_eos=stop_at_eos, top_logprobs=top_logprobs, on_token=on_token,
        )  # fmt: skip
        [result] = self.run(sampler_id, [request])
        if isinstance(result, Exception):
            raise result
        return result

    def prepare(
        self,
        prompt: list[int],
        num_samples: int,
        max_tokens: int | None,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = -1,
        stop: Sequence[str] | Sequence[int] | str | None = None,
        seed: int | None = None,
        *,
        stop_at_eos: bool = False,
        top_logprobs: int = 0,
        on_token: OnToken | None = None,
    ) -> DecodeRequest:
        """A checked request for ``run``; see ``runtime.decoding`` for the rules.
        max_tokens None: up to the context length. ``stop_at_eos``: the model's EOS ids end
        a sequence as well as ``stop`` (as OpenAI's ``stop`` works)."""
        base = self.base
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
            raise UserError(f"num_samples must be a positive integer, got {num_samples!r}")
        max_tokens = self.check_prompt(prompt, max_tokens)
        tokens = check_tokens(prompt, base.vocab_size, "prompt")
        params = SamplingParams.checked(temperature, top_p, top_k)
        criteria = StopCriteria.parse(stop, set(base.eos_token_ids), base.tokenizer)
        if stop_at_eos:
            criteria.token_ids |= set(base.eos_token_ids)
        generator = make_generator(torch.device(base.device), seed)
        return DecodeRequest(
            tokens.to(base.device), num_samples, max_tokens, params, criteria, generator,
            top_logprobs, on_token,
        )  # fmt: skip

    def check_prompt(self, prompt: Sequence[int], max_tokens: int | None) -> int:
        """``max_tokens`` (None: the rest of the context) after checking that it and the
        prompt fit the context and that the prompt's ids are in the vocabulary: plain
        Python on facts fixed at load, so any thread may ask before a request is queued."""
        base = self.base
        room = base.max_context - len(prompt)  # first: a prompt may be huge
        if max_tokens is None:
            max_tokens = room
        if max_tokens < 1:
            raise UserError(f"max_tokens must be at least 1, got {max_tokens}")
        if max_tokens > room:
            raise UserError(
                f"prompt ({len(prompt)} tokens) + max_tokens ({max_tokens}) exceeds this "
                f"model's context length of {base.max_context}"
            )
        if prompt and not 0 <= min(prompt) <= max(prompt) < base.vocab_size:
            bad = min(prompt) if min(prompt) < 0 else max(prompt)
            raise UserError(
                f"prompt contains token id {shown(bad)}, outside this model's vocabulary "
                f"[0, {base.vocab_size})"
            )
        return max_tokens

    def run(self, sampler_id: str | None, requests: Sequence[DecodeRequest]) -> list[Decoded]:
        """Decode ``requests`` in one batch on sampler ``sampler_id`` (None: the base model):
        per request its sequences, or the exception that ended it alone."""
        base = self.base
        base.adapters.activate(self.snapshots.resident_lora(sampler_id))
        with torch.inference_mode():
            return generate(base.model, requests, base.logits_to_keep, base.cache_arg)

    def prompt_logprobs(self, sampler_id: str | None, tokens: list[int]) -> list[float]:
        """logprob of tokens[i] given tokens[:i]; NaN at index 0."""
        base = self.base
        ids = check_tokens(tokens, base.vocab_size, "prompt")
        if len(ids) > base.max_context:
            raise UserError(
                f"prompt ({len(ids)} tokens) exceeds this model's context length of "
                f"{base.max_context}"
            )
        base.adapters.activate(self.snapshots.resident_lora(sampler_id))
        ids = ids.to(base.device)
        scored: list[float] = []
        if len(ids) > 1:
            with torch.inference_mode():
                logits = base.model(input_ids=ids[None, :-1], use_cache=False).logits[0]
                scored = token_logprobs(logits, ids[1:]).tolist()
        return [float("nan"), *scored]
