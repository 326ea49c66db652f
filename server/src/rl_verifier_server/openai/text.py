"""From sampled tokens to an OpenAI choice's text: decoded as it grows, cut before a stop
string (OpenAI returns text without its stop sequence), and released in pieces that are
safe to stream (no half of a multi-byte character, nothing a stop string may still claim).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

REPLACEMENT = "\ufffd"  # what decoding shows for an incomplete UTF-8 sequence


@dataclass
class TokenInfo:
    token: int
    logprob: float
    top: list[tuple[int, float]]


@dataclass
class ChoiceText:
    """One choice's text as its tokens arrive."""

    tokenizer: Any
    stops: list[str]
    eos_ids: frozenset[int]
    tokens: list[TokenInfo] = field(default_factory=list)
    released: int = 0  # characters handed out so far
    released_tokens: int = 0
    stopped: bool = False  # a stop string was found: nothing after it counts

    def add(self, token: int, logprob: float, top: list[tuple[int, float]]) -> None:
        if not self.stopped:
            self.tokens.append(TokenInfo(token, logprob, top))

    def text(self) -> str:
        """The whole text so far, cut before the first stop string."""
        ids = [t.token for t in self.tokens if t.token not in self.eos_ids]
        text = str(self.tokenizer.decode(ids, skip_special_tokens=True))
        cut = min((i for i in (text.find(s) for s in self.stops) if i >= 0), default=-1)
        if cut >= 0:
            self.stopped = True
            return text[:cut]
        return text

    def release(self, final: bool = False) -> tuple[str, list[TokenInfo]]:
        """The text not handed out yet that is safe to hand out, and its tokens (all of
        them when ``final``)."""
        text = self.text()
        end = len(text)
        if not final and not self.stopped:
            if text.endswith(REPLACEMENT):
                end = len(text.rstrip(REPLACEMENT))
            hold = max((len(s) for s in self.stops), default=1) - 1
            end = max(self.released, end - hold)
        piece = text[self.released : end]
        self.released = max(self.released, end)
        done = len(self.visible_tokens()) if final else len(self.tokens) if piece else 0
        done = max(done, self.released_tokens)
        tokens = self.tokens[self.released_tokens : done]
        self.released_tokens = done
        return piece, tokens

    def visible_tokens(self) -> list[TokenInfo]:
        """The tokens whose logprobs are reported: all but a final end-of-sequence token."""
        if self.tokens and self.tokens[-1].token in self.eos_ids:
            return self.tokens[:-1]
        return self.tokens


def token_text(tokenizer: Any, token: int) -> str:
    return str(tokenizer.decode([token], skip_special_tokens=False))
