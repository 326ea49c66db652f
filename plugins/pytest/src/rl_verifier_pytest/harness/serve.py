"""Solution side of the relay: load the solution, answer plain-data calls (stdlib only).

Runs sandboxed, in a process of its own; it never sees the tests. It answers calls of the
``entry`` function (HumanEval) or, given ``*`` (pytest files), of any public top-level name.
Requests arrive on stdin, one JSON line each; answers leave on the original stdout. The
solution's own prints go to stderr, so they cannot corrupt the channel (and the channel only reaches
the trusted host, which validates every answer before passing it on).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rl_verifier_pytest.harness import wire
else:  # inside the sandbox, next to this script
    sys.path.insert(0, "/harness")
    import wire


ANY = "*"  # entry for pytest files: every public name may be called


def main() -> None:
    entry, path = sys.argv[1], sys.argv[2]
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    inp = os.fdopen(os.dup(0), "rb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    namespace: dict[str, Any] = {"__name__": "solution", "__builtins__": __builtins__}
    failure = None
    try:
        with open(path, encoding="utf-8") as handle:
            code = compile(handle.read(), "solution.py", "exec")
        exec(code, namespace)
    except BaseException as exc:  # noqa: BLE001 - the solution failed to load
        failure = f"solution failed to load: {type(exc).__name__}: {exc}"
    for line in inp:
        out.write(wire.dumps(answer(line, namespace, entry, failure)))


def answer(
    line: bytes, namespace: dict[str, Any], entry: str, failure: str | None
) -> dict[str, Any]:
    if failure is not None:
        return {"error": failure}
    try:
        request = wire.loads(line)
        name = request.get("call")
        if entry == ANY:  # pytest files: any public top-level name of the solution
            allowed = type(name) is str and name.isidentifier() and not name.startswith("_")
        else:
            allowed = name == entry
        function = namespace.get(str(name)) if allowed else None
        if not callable(function):
            return {"error": f"NameError: solution does not define {name}()"[:200]}
        args = [wire.decode(a) for a in request["args"]]
        kwargs = {k: wire.decode(v) for k, v in request["kwargs"]}
        result = function(*args, **kwargs)
        return {"ok": wire.encode(result)}
    except BaseException as exc:  # noqa: BLE001 - reported to the tests as a failed call
        try:
            return {"error": f"{type(exc).__name__}: {exc}"[:2000]}
        except BaseException:  # noqa: BLE001
            return {"error": "call failed"}


if __name__ == "__main__":  # a warm server imports this module first
    main()
