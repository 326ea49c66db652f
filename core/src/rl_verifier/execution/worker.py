"""Worker process for ``ProcessExecutor``: one JSON request per line on stdin (one sample,
or a batch of them), one answer per line on the original stdout. Anything a verifier
prints goes to stderr."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import traceback
from typing import BinaryIO

from rl_verifier.base.verifier import Verifier
from rl_verifier.execution.batch_calls import verify_batch_answer
from rl_verifier.execution.verifier_calls import (
    OK_ANSWER,
    Message,
    error_answer,
    open_verifier,
    verify_answer,
)


class WorkerState:
    def __init__(self) -> None:
        self.verifiers: dict[str, Verifier] = {}

    async def handle(self, message: Message) -> Message:
        op = message["op"]
        if op == "open":
            self.verifiers[message["key"]] = await open_verifier(message)
            return OK_ANSWER
        if op == "verify":
            return await verify_answer(self.verifiers[message["key"]], message)
        if op == "verify_batch":
            verifier = self.verifiers[message["key"]]
            return await verify_batch_answer(verifier, message, message["timeout_s"])
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
                answer = error_answer(exc)
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
