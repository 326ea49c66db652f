"""Per-server resource limits, and the errors that answer requests beyond them."""

from __future__ import annotations

from dataclasses import dataclass

from rl_verifier_server.errors import StatusError


@dataclass(frozen=True)
class ServerLimits:
    """Defaults are generous: far above what ``rlv train`` and the Tinker cookbook use."""

    max_body_mb: int = 256  # one request body, after zstd decompression
    max_tokens: int = 8192  # sampling: SamplingParams.max_tokens
    max_num_samples: int = 128  # sampling: num_samples per request
    max_training_clients: int = 32  # live LoRA training clients (adapter + Adam state)
    max_samplers: int = 128  # sampler snapshots held; the least recently used go first
    session_timeout_s: float = 600.0  # a session without heartbeats this long is ended
    batch_memory_gb: float = 4.0  # estimated activations of one forward_backward micro-batch

    @property
    def max_body_bytes(self) -> int:
        return self.max_body_mb * 1024 * 1024


def too_large(limit_bytes: int) -> StatusError:
    return StatusError(
        f"request body exceeds this server's limit of {limit_bytes // (1024 * 1024)} MiB "
        "(rlv serve --max-body-mb)",
        status=413,
    )
