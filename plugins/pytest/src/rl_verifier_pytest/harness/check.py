"""Test side of the relay: run HumanEval-style ``check(candidate)`` (stdlib only).

Runs sandboxed, in a process that never imports the solution. ``candidate`` is a proxy:
each call is encoded as plain data and written to stdout as ``REQ <json>``; the trusted
host passes it to the solution process and writes the answer back on stdin. A step passes
when it ran to its end and every call that failed in it was seen by Python code (see
``failures``). Only this process decides which tests passed; it reports once, as
``END <json>``, on its own stdout.
"""

from __future__ import annotations

import ast
import json
import os
import sys
from collections.abc import Callable
from types import CodeType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rl_verifier_pytest.harness import failures, remote, wire
else:  # inside the sandbox, next to this script
    sys.path.insert(0, "/harness")
    import failures
    import remote
    import wire

Step = tuple[CodeType, bool]


def units(test_source: str) -> list[Step] | None:
    """Top-level statements of ``check``'s body; those holding an assert are tests."""
    tree = ast.parse(test_source)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            body = node.body
            break
    else:
        return None
    compiled: list[Step] = []
    for stmt in body:
        module = ast.Module(body=[stmt], type_ignores=[])
        try:
            code = compile(module, "<check>", "exec")
        except SyntaxError:
            return None
        is_test = any(isinstance(n, ast.Assert) for n in ast.walk(stmt))
        compiled.append((code, is_test))
    if not any(is_test for _, is_test in compiled):
        return None
    return compiled


def run(spec: dict[str, Any], candidate: Callable[..., Any]) -> list[bool]:
    namespace: dict[str, Any] = {"__name__": "__rlv_check__", "__builtins__": __builtins__}
    exec(compile(spec["prompt"], "<prompt>", "exec"), namespace)
    exec(compile(spec["test"], "<test>", "exec"), namespace)
    namespace["candidate"] = candidate
    namespace[spec["entry_point"]] = candidate  # some checks call the function by name
    steps = units(spec["test"]) if spec["split"] else None
    if steps is None:
        steps = [(compile("check(candidate)", "<check>", "exec"), True)]
    results: list[bool] = []
    broken = False
    for code, is_test in steps:
        ok = not broken
        if ok:
            failures.clear()
            try:
                exec(code, namespace)
            except Exception:  # noqa: BLE001 - an assertion or a failed call: test failed
                ok = False
            else:  # it ran to its end, unless a failed call was silently cut short
                ok = not failures.unseen()
        if is_test:
            results.append(ok)
            if not ok and spec["stop_on_failure"]:
                broken = True
        elif not ok:
            broken = True  # setup failed: the rest cannot run
    return results


def main() -> None:
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    inp = os.fdopen(os.dup(0), "rb")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    with open(sys.argv[1], encoding="utf-8") as handle:
        spec = json.load(handle)
    results = run(spec, remote.function(spec["entry_point"], out, inp))
    out.write(b"END " + wire.dumps({"results": results}))


if __name__ == "__main__":  # a warm server imports this module first
    main()
