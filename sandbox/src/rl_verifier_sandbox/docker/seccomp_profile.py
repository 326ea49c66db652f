"""The bwrap backend's seccomp deny list (``seccomp``) as a Docker seccomp profile.

Containers get this profile instead of the engine's default one, so a job meets the same
filter on both backends: every call is allowed except ``seccomp.DENIED`` (EPERM), personas
other than the default, ``clone`` with a namespace flag, ``socket``/``socketpair`` of a family
outside ``seccomp.SOCKET_FAMILIES_ALLOWED`` (EPERM) and ``clone3`` (ENOSYS, so
libc falls back to ``clone``); calls of another architecture kill the process. Docker's own
default profile (Engine 20.10) lets ``ptrace``, ``io_uring_*`` and ``personality`` through.
"""

from __future__ import annotations

import errno
import functools
import json
import platform
from typing import Any

from rl_verifier_sandbox.linux import seccomp

ARCHES = {"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64"}


def _deny(names: list[str], code: int = errno.EPERM, **rule: Any) -> dict[str, Any]:
    return {"names": names, "action": "SCMP_ACT_ERRNO", "errnoRet": code, **rule}


def _masked(mask: int, value: int) -> list[dict[str, Any]]:
    return [{"index": 0, "value": mask, "valueTwo": value, "op": "SCMP_CMP_MASKED_EQ"}]


@functools.cache
def profile() -> str:
    """The profile as JSON, for ``security_opt=["seccomp=<json>"]``."""
    rules = [_deny(list(seccomp.DENIED))]
    # the same (mask, value) pairs the bwrap filter denies: every persona but 0 and all ones
    rules += [_deny(["personality"], args=_masked(m, v)) for m, v in seccomp.personality_denials()]
    flags = seccomp.CLONE_NAMESPACE_FLAGS.values()
    rules += [_deny(["clone"], args=_masked(flag, flag)) for flag in flags]
    rules.append(_deny(["clone3"], errno.ENOSYS))
    for op, value in seccomp.socket_family_denials():  # the same comparisons as bwrap's filter
        rule = [{"index": 0, "value": value, "op": f"SCMP_CMP_{op}"}]
        rules.append(_deny(list(seccomp.SOCKET_CALLS), args=rule))
    body: dict[str, Any] = {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": rules}
    arch = ARCHES.get(platform.machine())
    if arch:
        body["architectures"] = [arch]  # another architecture's calls: killed
    return json.dumps(body, separators=(",", ":"))
