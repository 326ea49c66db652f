"""User errors answered with a specific HTTP status rather than the default 400."""

from __future__ import annotations

from rl_verifier import UserError


class StatusError(UserError):
    """A user error with its HTTP status: 410 (ended), 413 (too large), 429 (at capacity)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status
