"""Per-server resource limits, the fixed limits of every sampling and training request, and
the errors that answer requests beyond them."""

from __future__ import annotations

from dataclasses import dataclass

from rl_verifier_server.base.errors import StatusError

MIB = 1024 * 1024
JSON_BYTES_PER_PROMPT_CHAR = 16  # a character JSON-escaped as a surrogate pair takes 12
JSON_BODY_EXTRA_BYTES = MIB  # room in a JSON body for what is not the prompt
MAX_STOP_SEQUENCES = 32  # stop strings or stop token ids of one Tinker sampling request
MAX_STOP_CHARS = 256  # characters of one stop string (each is looked for after every token)
MAX_DATUMS = 1024  # datums of one forward_backward call (the SDK sends at most this many)
MAX_DATUM_PARTS = 1 << 17  # model-input chunks, loss inputs and provenance spans of one call


@dataclass(frozen=True)
class ServerLimits:
    """Defaults are generous: far above what ``rlv train`` and the Tinker cookbook use."""

    max_body_mb: int = 256  # one request body, after zstd decompression
    max_tokens: int = 8192  # sampling: SamplingParams.max_tokens
    max_num_samples: int = 128  # sampling: num_samples per request
    max_prompt_chars: int = 1_000_000  # sampling: characters of one request's prompt text
    max_training_clients: int = 32  # live LoRA training clients (adapter + Adam state)
    max_samplers: int = 128  # sampler snapshots held; the least recently used go first
    session_timeout_s: float = 600.0  # a session without heartbeats this long is ended
    batch_memory_gb: float = 4.0  # estimated activations of one forward_backward micro-batch

    @property
    def max_body_bytes(self) -> int:
        return self.max_body_mb * MIB

    @property
    def max_json_bytes(self) -> int:
        """A JSON body (every route but ``forward_backward``): room for the largest prompt
        allowed, within ``max_body_bytes``."""
        room = JSON_BYTES_PER_PROMPT_CHAR * self.max_prompt_chars + JSON_BODY_EXTRA_BYTES
        return min(self.max_body_bytes, room)

    @property
    def max_loss_input_values(self) -> int:
        """Values all loss inputs of one ``forward_backward`` call may hold once decoded: as
        many as a dense body of ``max_body_bytes`` could (4 bytes each), so a sparse tensor
        never costs more than the largest body could."""
        return self.max_body_bytes // 4


def too_large(limit_bytes: int) -> StatusError:
    return StatusError(
        f"request body exceeds this server's limit of {limit_bytes / MIB:.4g} MiB for it "
        "(rlv serve --max-body-mb; a JSON body also within "
        f"{JSON_BYTES_PER_PROMPT_CHAR} bytes per --max-prompt-chars character plus 1 MiB)",
        status=413,
    )
