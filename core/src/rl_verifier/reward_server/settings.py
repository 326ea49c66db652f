"""What a reward server is started with: its reward, address, token and limits."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rl_verifier.base.errors import UserError
from rl_verifier.scoring.engine import ExecutorKind

MIB = 1024 * 1024
REQUEST_OVERHEAD_BYTES = 16 * 1024  # charged to the body budget per request, however small
TOKEN_VARIABLE = "RLV_REWARD_SERVER_TOKEN"
TOKEN_FORM = re.compile(r"[\x21-\x7e]{8,}")  # printable ASCII, no spaces, 8 or more


def check_token(token: str) -> str:
    """``token`` if it is usable in a header and a URL; else a ``UserError``."""
    if not TOKEN_FORM.fullmatch(token):
        raise UserError(
            "a reward-server token must be at least 8 printable ASCII characters with no "
            "spaces (e.g. from: python -c 'import secrets; print(secrets.token_urlsafe())')"
        )
    return token


@dataclass(frozen=True)
class RewardServerLimits:
    """How much a server takes on at once; past these a request gets 413 or 429."""

    max_body_bytes: int = 32 * MIB
    """Largest request body (413 above it)."""
    max_pending_samples: int = 4096
    """Samples admitted and not yet answered, over all requests (429 above it)."""
    max_pending_bytes: int = 512 * MIB
    """Request bodies held at once, over all requests (429 above it)."""
    deadline_s: float = 150.0
    """Longest a request may take; samples unscored by then come back as ``timeout``."""

    def __post_init__(self) -> None:
        if self.max_pending_bytes < self.max_body_bytes + REQUEST_OVERHEAD_BYTES:
            raise UserError(
                "--max-pending-mb must be more than --max-body-mb, or a request of the "
                "largest size could never be admitted"
            )


@dataclass(frozen=True)
class ServerOptions:
    """Everything ``rlv reward-server`` takes from its command line."""

    spec: str
    settings: dict[str, Any] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 8787
    token: str | None = None
    executor: ExecutorKind = "process"
    workers: int | None = None
    address: str | None = None  # Ray cluster (executor 'ray')
    failed_reward: float = 0.0
    port_file: Path | None = None
    limits: RewardServerLimits = field(default_factory=RewardServerLimits)
