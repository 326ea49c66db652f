"""Worker process for ``ProcessExecutor``: one JSON request per line on stdin, one
answer per line on the original stdout. Anything a verifier prints goes to stderr."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
import traceback
from typing import Any, BinaryIO

from rl_verifier.contracts import Completion, Task
from rl_verifier.executors import call_verify, describe
from rl_verifier.verifier import Verifier


def load_class(path: str) -> type[Verifier]:
    module_name, _, qualname = path.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    if not (isinstance(target, type) and issubclass(target, Verifier)):
        raise TypeError(f"{path} is not a Verifier subclass")
    return target


class WorkerState:
    def __init__(self) -> None:
        self.verifiers: dict[str, Verifier] = {}

    async def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        op = message["op"]
        if op == "open":
            verifier = load_class(message["cls"])(message["config"])
            await verifier.open()
            self.verifiers[message["key"]] = verifier
            return {"ok": True}
        if op == "verify":
            verifier = self.verifiers[message["key"]]
            task = Task.model_validate(message["task"])
            completion = Completion.model_validate(message["completion"])
            verdict = await call_verify(verifier, task, completion)
            return {"ok": True, "verdict": verdict.model_dump(mode="json")}
        raise ValueError(f"unknown request {op!r}")

    async def close(self) -> None:
        for verifier in self.verifiers.values():
            try:
                await verifier.close()
            except Exception:  # noqa: BLE001 - closing is best effort at exit
                traceback.print_exc()


def serve(requests: BinaryIO, answers: BinaryIO) -> None:
    loop = asyncio.new_event_loop()
    state = WorkerState()
    try:
        for line in requests:
            try:
                answer = loop.run_until_complete(state.handle(json.loads(line)))
            except Exception as exc:  # noqa: BLE001 - every fault goes back to the parent
                answer = {"ok": False, "error": describe(exc), "traceback": traceback.format_exc()}
            answers.write(json.dumps(answer).encode() + b"\n")
            answers.flush()
    finally:
        loop.run_until_complete(state.close())
        loop.close()


def main() -> None:
    extra = json.loads(os.environ.get("RLV_WORKER_SYS_PATH", "[]"))
    sys.path[:0] = [p for p in extra if p not in sys.path]
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints from verifiers must not corrupt the protocol
    serve(sys.stdin.buffer, answers)


if __name__ == "__main__":
    main()
