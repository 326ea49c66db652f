"""Chat messages to prompt tokens and sampled tokens back to text, via the chat template.

Multi-turn episodes keep the exact tokens the model sampled and append the tokens of what the
environment inserts after them (tool results, the next generation prompt). Those tokens come
from a text diff of two renderings of the chat, which rests on one assumption:

**Prefix consistency.** Rendering ``history`` with a generation prompt, then
``history + [assistant turn]``, then ``history + [assistant turn] + new_messages`` with a
generation prompt, each rendering starts with the one before, and the rendered assistant turn
starts with the sampled text. ChatML templates (Qwen 2/2.5, ``rlv/tiny-chat``) satisfy it.
Templates that rewrite earlier turns do not (Qwen3 drops past ``<think>`` blocks, Llama 3
trims content whitespace); :meth:`Renderer.continuation_tokens` then raises ValueError rather
than train on tokens that do not match the chat.

The token-level result also assumes that tokenization does not merge across the boundary
where the sampled turn ends; with a stop token (a special token) there, it never does.
"""

from __future__ import annotations

import contextlib
from typing import Any

_PROBE_TEXT = "rlv-probe-reply"


class Renderer:
    """Turns chat messages into prompt tokens and parses sampled tokens back, using the
    tokenizer's chat template."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self._stop = self._find_stop()

    # -- rendering -------------------------------------------------------------------------

    def render(self, messages: list[dict[str, Any]], add_generation_prompt: bool) -> str:
        """The chat template applied to ``messages``, as text."""
        text = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=add_generation_prompt, tokenize=False
        )
        if not isinstance(text, str):
            raise TypeError(f"apply_chat_template returned {type(text).__name__}, not str")
        return text

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, without any added BOS/EOS."""
        return [int(t) for t in self.tokenizer.encode(text, add_special_tokens=False)]

    def prompt_tokens(self, messages: list[dict[str, Any]] | str) -> list[int]:
        """Tokens of ``messages`` followed by the assistant generation prompt.

        A plain string is a single user message.
        """
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        return self.encode(self.render(messages, add_generation_prompt=True))

    # -- parsing ---------------------------------------------------------------------------

    def stop(self) -> list[int]:
        """Token ids that end an assistant turn.

        The special token the chat template writes right after an assistant message's content
        (``<|im_end|>`` for ChatML); the tokenizer's EOS token when that cannot be found.
        """
        return list(self._stop)

    def response_text(self, tokens: list[int]) -> str:
        """Text of sampled tokens, without the trailing stop token and special tokens."""
        body = tokens[:-1] if tokens and tokens[-1] in self._stop else tokens
        return str(self.tokenizer.decode(list(body), skip_special_tokens=True))

    def continuation_tokens(
        self,
        history: list[dict[str, Any]],
        sampled: list[int],
        new_messages: list[dict[str, Any]],
    ) -> list[int]:
        """Tokens to append after the sampled assistant turn so that
        ``prompt_tokens(history) + sampled + result`` is the rendering of
        ``history + [assistant turn] + new_messages`` with a generation prompt.

        ``history`` is the chat the turn was sampled from. A turn that does not end with a stop
        token (cut by max_tokens) is closed first: the result then starts with the template's
        end-of-turn text. For this diff the assistant turn's content is the sampled text with
        any special tokens kept, so that it re-encodes to the sampled ids. Raises ValueError
        when the template is not prefix-consistent (see the module docstring).
        """
        closed = bool(sampled) and sampled[-1] in self._stop
        body = sampled[:-1] if closed else sampled
        content = str(self.tokenizer.decode(list(body), skip_special_tokens=False))
        sampled_text = content
        if closed:
            sampled_text += str(self.tokenizer.decode([sampled[-1]], skip_special_tokens=False))
        with_turn = [*history, {"role": "assistant", "content": content}]
        prompt = self.render(history, add_generation_prompt=True)
        turn_rendered = self.render(with_turn, add_generation_prompt=False)
        full = self.render([*with_turn, *new_messages], add_generation_prompt=True)
        if not turn_rendered.startswith(prompt):
            raise ValueError(
                "chat template is not prefix-consistent: the chat with the assistant turn does "
                "not start with the generation prompt rendering of the chat before it"
            )
        if not full.startswith(turn_rendered):
            raise ValueError(
                "chat template is not prefix-consistent: adding messages after the assistant "
                "turn changes how the earlier turns render"
            )
        turn_text = turn_rendered[len(prompt) :]
        if not turn_text.startswith(sampled_text):
            raise ValueError(
                "chat template is not prefix-consistent: the rendered assistant turn "
                f"{turn_text[:200]!r} does not start with the sampled text {sampled_text[:200]!r}"
            )
        return self.encode(full[len(prompt) + len(sampled_text) :])

    # -- internals -------------------------------------------------------------------------

    def _find_stop(self) -> list[int]:
        """Probe the template for the special token that closes an assistant turn."""
        eos = getattr(self.tokenizer, "eos_token_id", None)
        fallback = [int(eos)] if isinstance(eos, int) else []
        user = [{"role": "user", "content": "hi"}]
        try:
            prompt = self.render(user, add_generation_prompt=True)
            turn = self.render(
                [*user, {"role": "assistant", "content": _PROBE_TEXT}],
                add_generation_prompt=False,
            )
        except Exception:  # noqa: BLE001 - any template failure means: use the EOS token
            return fallback
        head = prompt + _PROBE_TEXT
        if not turn.startswith(head):
            return fallback
        tail = turn[len(head) :]
        for token, token_id in sorted(self._special_tokens().items(), key=lambda t: -len(t[0])):
            if tail.startswith(token):
                return [token_id]
        return fallback

    def _special_tokens(self) -> dict[str, int]:
        specials: dict[str, int] = {}
        decoder = getattr(self.tokenizer, "added_tokens_decoder", None)
        if isinstance(decoder, dict):
            for token_id, token in decoder.items():
                if getattr(token, "special", True):
                    specials[str(getattr(token, "content", token))] = int(token_id)
        for token in getattr(self.tokenizer, "all_special_tokens", None) or []:
            with contextlib.suppress(Exception):
                token_id = self.tokenizer.convert_tokens_to_ids(token)
                if isinstance(token_id, int) and token_id >= 0:
                    specials.setdefault(str(token), token_id)
        return specials
