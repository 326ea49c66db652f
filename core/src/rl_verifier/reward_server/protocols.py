"""The reward server's built-in wire protocols, registered by the core's built-in plugin:
the typed batch (``POST /v1/score``) and OpenRLHF's remote reward (``POST /get_reward``).

A plugin adds another with the ``register_reward_protocols`` hook. The web stack is
imported only when a request is parsed, so registering costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rl_verifier.discovery.extensions import RewardProtocol

if TYPE_CHECKING:
    from rl_verifier.base.contracts import Score
    from rl_verifier.reward_server.settings import ServerOptions
    from rl_verifier.reward_server.wire import Batch

TYPED_PATH = "/v1/score"
OPENRLHF_PATH = "/get_reward"


def _typed_batch(raw: bytes) -> Batch:
    from rl_verifier.reward_server.wire import typed_batch

    return typed_batch(raw)


def _typed_answer(scores: list[Score], options: ServerOptions) -> bytes:
    from rl_verifier.reward_server.wire import typed_answer

    return typed_answer(scores)


def _openrlhf_batch(raw: bytes) -> Batch:
    from rl_verifier.reward_server.wire import openrlhf_batch

    return openrlhf_batch(raw)


def _openrlhf_answer(scores: list[Score], options: ServerOptions) -> bytes:
    from rl_verifier.reward_server.wire import openrlhf_answer

    return openrlhf_answer(scores, options.failed_reward)


BUILTIN_PROTOCOLS = (
    RewardProtocol("typed", TYPED_PATH, _typed_batch, _typed_answer),
    RewardProtocol("openrlhf", OPENRLHF_PATH, _openrlhf_batch, _openrlhf_answer),
)
