"""Who may reach a local server: loopback addresses, and secrets compared in constant time."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable


def is_loopback(host: str) -> bool:
    """Whether a bound address is reachable from this machine only."""
    try:
        address = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def key_matches(presented: bytes, keys: Iterable[bytes]) -> bool:
    """Constant-time comparison against every key (no early exit)."""
    matched = False
    for key in keys:
        matched |= hmac.compare_digest(presented, key)
    return matched
