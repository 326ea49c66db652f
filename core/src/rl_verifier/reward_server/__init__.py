"""``rlv reward-server``: verifiers over HTTP for any trainer.

A typed endpoint (``POST /v1/score``: tasks and completions in, the score rows ``rlv
verify`` writes out) and OpenRLHF's remote reward protocol (``POST /get_reward``), over
one ``rl_verifier.Scorer``, with bearer-token auth beyond loopback, request size limits,
admission control (429 with Retry-After), per-request deadlines, cancellation when a
client goes away, graceful shutdown, ``/healthz`` and Prometheus ``/metrics``.

Importing this package is cheap; the web server is imported only when one is started.
"""

from rl_verifier.reward_server.settings import RewardServerLimits, ServerOptions

Limits = RewardServerLimits  # deprecated name (rl_verifier_sandbox.Limits limits one job)

__all__ = ["Limits", "RewardServerLimits", "ServerOptions"]
