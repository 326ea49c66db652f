"""String normalisation for comparing argument values, in the spirit of BFCL's checker."""

from __future__ import annotations

# Characters ignored when comparing strings: whitespace and light punctuation.
IGNORED = frozenset(" \t\n\r\f\v,./-_*^'\"")


def normalise_string(value: str) -> str:
    """Lowercase with whitespace, commas, periods, slashes, hyphens, underscores,
    asterisks, carets and quotes removed: ``"New York, NY"`` equals ``"new york ny"``."""
    return "".join(ch for ch in value.lower() if ch not in IGNORED)
