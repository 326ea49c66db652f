"""OpenAI-compatible generation on a base model or a saved checkpoint: render the prompts,
sample ``n`` choices each, and shape the answer (whole, or as stream chunks).

``encoded_prompts`` renders and tokenises the prompts (on a worker thread), ``generation``
makes the sample job (batched with other requests on the compute thread);
``on_piece`` (streaming) hears each piece of text that became safe to send, with its
tokens.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rl_verifier import UserError
from rl_verifier_server.base.limits import ServerLimits
from rl_verifier_server.openai.request import GenerateCall, prompt_too_long
from rl_verifier_server.openai.text import ChoiceText, TokenInfo, token_text
from rl_verifier_server.scheduling.sample_batches import Part, SampleJob
from rl_verifier_server.state.service import Service
from rl_verifier_server.tinker.sampling_calls import Source, base_host, sampler_for

if TYPE_CHECKING:
    from rl_verifier_server.runtime import ModelHost
    from rl_verifier_server.runtime.decoding import OnToken
    from rl_verifier_server.runtime.types import SampledSequence

# on_piece(tokenizer, index, text, tokens, finish_reason): choice ``index`` has more text
OnPiece = Callable[[Any, int, str, list[TokenInfo], str | None], None]


@dataclass
class Generated:
    """What ``generate`` made: the choices in order, and the token counts."""

    choices: list[ChoiceText]
    finish_reasons: list[str]
    prompt_tokens: int
    completion_tokens: int
    tokenizer: Any


@dataclass(frozen=True)
class Prompt:
    """One prompt's tokens and how many tokens may follow them."""

    tokens: list[int]
    max_tokens: int


async def encoded_prompts(service: Service, call: GenerateCall, source: Source) -> list[Prompt]:
    """``call``'s prompts rendered, tokenised and checked against the model's vocabulary and
    context on a worker thread, never on the compute thread (a model not loaded yet is
    loaded there first)."""
    host = await base_host(service, source)
    return await asyncio.to_thread(encode, host, call, service.limits)


def encode(host: ModelHost, call: GenerateCall, limits: ServerLimits) -> list[Prompt]:
    prompts = []
    for tokens in prompt_tokens(host.base.tokenizer, call, limits):
        room = host.base.max_context - len(tokens)
        wanted = call.max_tokens if call.max_tokens is not None else min(room, limits.max_tokens)
        prompts.append(Prompt(tokens, host.sampling.check_prompt(tokens, max(wanted, 1))))
    return prompts


def generation(
    service: Service,
    call: GenerateCall,
    source: Source,
    prompts: list[Prompt],
    on_piece: OnPiece | None = None,
) -> SampleJob:
    """Every choice of ``call`` (its ``prompts`` already encoded) as one sample job
    (``sample_batches``): its value is a ``Generated``."""
    state: dict[str, Any] = {}

    def prepare() -> list[Part]:
        sampler = sampler_for(service, None, source)
        base = sampler.host.base
        tokenizer = base.tokenizer
        eos = frozenset(base.eos_token_ids)
        groups: list[list[ChoiceText]] = []
        parts: list[Part] = []
        for p, prompt in enumerate(prompts):
            group = [ChoiceText(tokenizer, call.stop, eos) for _ in range(call.n)]
            request = sampler.host.sampling.prepare(
                prompt.tokens,
                num_samples=call.n,
                max_tokens=prompt.max_tokens,
                temperature=call.params.temperature,
                top_p=call.params.top_p,
                stop=call.stop,
                seed=None if call.seed is None else call.seed + p,
                stop_at_eos=True,
                top_logprobs=call.top_logprobs,
                on_token=_listener(tokenizer, group, p * call.n, on_piece),
            )
            groups.append(group)
            parts.append(Part(sampler.host.sampling, sampler.adapter, request))
        state.update(tokenizer=tokenizer, groups=groups)
        return parts

    def finish(results: list[list[SampledSequence]]) -> Generated:
        tokenizer = state["tokenizer"]
        choices: list[ChoiceText] = []
        reasons: list[str] = []
        completion_count = 0
        for p, (group, sequences) in enumerate(zip(state["groups"], results, strict=True)):
            for sample, (choice, sequence) in enumerate(zip(group, sequences, strict=True)):
                reason = "stop" if sequence.stop_reason == "stop" or choice.stopped else "length"
                reasons.append(reason)
                completion_count += len(sequence.tokens)
                if on_piece is not None:
                    piece, tokens = choice.release(final=True)
                    on_piece(tokenizer, p * call.n + sample, piece, tokens, reason)
            choices += group
        prompt_count = sum(len(prompt.tokens) for prompt in prompts)
        return Generated(choices, reasons, prompt_count, completion_count, tokenizer)

    return SampleJob(prepare, finish, rows=call.n * call.prompt_count)


def _listener(
    tokenizer: Any, group: list[ChoiceText], first_index: int, on_piece: OnPiece | None
) -> OnToken:
    """Hears one prompt's tokens: adds them to its choices and passes on safe text."""

    def heard(sample: int, token: int, lp: float, top: list[tuple[int, float]]) -> None:
        choice = group[sample]
        choice.add(token, lp, top)
        if on_piece is not None:
            piece, tokens = choice.release()
            if piece or tokens:
                on_piece(tokenizer, first_index + sample, piece, tokens, None)

    return heard


def prompt_tokens(tokenizer: Any, call: GenerateCall, limits: ServerLimits) -> list[list[int]]:
    if call.messages is not None:
        if not getattr(tokenizer, "chat_template", None):
            raise UserError(
                f"model '{call.model}' has no chat template: use /v1/completions with a prompt"
            )
        text = tokenizer.apply_chat_template(
            call.messages, add_generation_prompt=True, tokenize=False
        )
        if len(text) > limits.max_prompt_chars:  # the template's own text counts too
            raise prompt_too_long(len(text), limits)
        return [list(tokenizer.encode(text, add_special_tokens=False))]
    if call.texts is not None:
        encoded = [list(tokenizer.encode(text)) for text in call.texts]
        if any(not tokens for tokens in encoded):
            raise UserError("'prompt' must not be empty")
        return encoded
    assert call.prompts is not None
    return call.prompts


# Shapes --------------------------------------------------------------------------------------


class Shaper:
    """The JSON of one request's answer or stream chunks."""

    def __init__(self, call: GenerateCall) -> None:
        self.call = call
        chat = call.kind == "chat"
        self.id = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        self.created = int(time.time())
        self.object = "chat.completion" if chat else "text_completion"
        self.chunk_object = "chat.completion.chunk" if chat else "text_completion"

    def answer(self, done: Generated) -> dict[str, Any]:
        choices = []
        for index, (choice, reason) in enumerate(
            zip(done.choices, done.finish_reasons, strict=True)
        ):
            text = choice.text()
            logprobs = self.logprobs(done.tokenizer, choice.visible_tokens(), 0)
            if self.call.kind == "chat":
                message = {"role": "assistant", "content": text}
                choices.append(
                    {"index": index, "message": message, "logprobs": logprobs,
                     "finish_reason": reason}
                )  # fmt: skip
            else:
                choices.append(
                    {"index": index, "text": text, "logprobs": logprobs, "finish_reason": reason}
                )
        return {**self.head(self.object), "choices": choices, "usage": self.usage(done)}

    def chunk(
        self, tokenizer: Any, index: int, text: str, tokens: list[TokenInfo], end: str | None,
        offset: int, first: bool,
    ) -> dict[str, Any]:  # fmt: skip
        """One stream chunk for choice ``index``; ``offset``: characters sent before."""
        logprobs = self.logprobs(tokenizer, tokens, offset) if tokens else None
        if self.call.kind == "chat":
            delta: dict[str, Any] = {"role": "assistant"} if first else {}
            if text or first:
                delta["content"] = text
            choice = {"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": end}
        else:
            choice = {"index": index, "text": text, "logprobs": logprobs, "finish_reason": end}
        return {**self.head(self.chunk_object), "choices": [choice]}

    def usage_chunk(self, done: Generated) -> dict[str, Any]:
        return {**self.head(self.chunk_object), "choices": [], "usage": self.usage(done)}

    def head(self, kind: str) -> dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.call.model}

    def usage(self, done: Generated) -> dict[str, int]:
        return {
            "prompt_tokens": done.prompt_tokens,
            "completion_tokens": done.completion_tokens,
            "total_tokens": done.prompt_tokens + done.completion_tokens,
        }

    def logprobs(self, tokenizer: Any, tokens: list[TokenInfo], offset: int) -> Any:
        if not self.call.logprobs:
            return None
        if self.call.kind == "chat":
            return {"content": [chat_logprob(tokenizer, t) for t in tokens], "refusal": None}
        texts = [token_text(tokenizer, t.token) for t in tokens]
        offsets = []
        for text in texts:
            offsets.append(offset)
            offset += len(text)
        tops = (
            [{token_text(tokenizer, i): lp for i, lp in t.top} for t in tokens]
            if self.call.top_logprobs
            else None
        )
        return {
            "tokens": texts,
            "token_logprobs": [t.logprob for t in tokens],
            "top_logprobs": tops,
            "text_offset": offsets,
        }


def chat_logprob(tokenizer: Any, info: TokenInfo) -> dict[str, Any]:
    text = token_text(tokenizer, info.token)
    top = [
        {"token": (t := token_text(tokenizer, i)), "logprob": lp, "bytes": list(t.encode())}
        for i, lp in info.top
    ]
    return {
        "token": text,
        "logprob": info.logprob,
        "bytes": list(text.encode()),
        "top_logprobs": top,
    }
