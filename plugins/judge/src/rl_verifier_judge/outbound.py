"""What a judge call sends, built in one place: the URL and the JSON body, sent exactly as
built, and the call cache's key is their digest. A setting that reaches the endpoint
reaches the key with it; nothing else is sent but the headers (the API key and
``Accept-Encoding: identity``), which do not decide the reply."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from rl_verifier_judge.settings import JudgeSettings

SCORE_REPLY_TOKENS = 3  # format='logprobs': the score is read at the first token


@dataclass(frozen=True)
class Outbound:
    """One judge call's URL and JSON body."""

    url: str
    body: dict[str, Any]

    @property
    def key(self) -> str:
        """The call cache's key: SHA-256 of the URL and the body, as sent."""
        call = {"url": self.url, "body": self.body}
        text = json.dumps(call, sort_keys=True, separators=(",", ":"))
        return "judge:" + hashlib.sha256(text.encode()).hexdigest()


def outbound(settings: JudgeSettings, messages: list[dict[str, str]]) -> Outbound:
    """The call that asks ``settings``' judge about ``messages``."""
    s = settings
    body: dict[str, Any] = {
        "model": s.model,
        "messages": messages,
        "temperature": s.temperature,
        "max_tokens": s.max_tokens,
    }
    if s.seed is not None:
        body["seed"] = s.seed
    if s.format == "logprobs":
        body["max_tokens"] = min(s.max_tokens, SCORE_REPLY_TOKENS)
        body["logprobs"] = True
        body["top_logprobs"] = s.top_logprobs
    if s.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return Outbound(s.base_url.rstrip("/") + "/chat/completions", body)


__all__ = ["Outbound", "outbound"]
