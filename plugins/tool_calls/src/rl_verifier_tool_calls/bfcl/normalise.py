"""BFCL's string standardisation, used wherever it compares strings."""

from __future__ import annotations

# BFCL removes the space character and , . / - _ * ^ (not tabs, newlines or other
# whitespace), lowercases, and then writes every ' as ".
REMOVED = str.maketrans("", "", " ,./-_*^")


def standardise(text: str) -> str:
    """``"New York, NY"`` and ``"new-york ny"`` both become ``"newyorkny"``; ``"it's"``
    becomes ``'it"s'``."""
    return text.translate(REMOVED).lower().replace("'", '"')
