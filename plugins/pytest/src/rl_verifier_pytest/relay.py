"""The trusted host between the sandboxed test process and the sandboxed solution process.

The host passes each ``REQ`` line of the test process to the solution process and
hands back the answer, after checking that it is one well-formed plain-data message
(re-encoded, so nothing but ``{"ok": value}`` or ``{"error": text}`` reaches the
tests). The verdict is the test process's own ``END`` line; nothing the solution
process writes can be read as one. Every read and write on either channel is bounded by the
run's deadline, so a solution that never reads its requests has failed at its own wall
limit, like one that never answers.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from rl_verifier_pytest.lines import Deadline, LineReader, TooLong, write_all
from rl_verifier_sandbox import LiveProcess

MAX_LINE = 8 << 20


@dataclass
class Exchange:
    """How the conversation ended."""

    results: list[bool] | None  # None: the test process gave no verdict
    timed_out: bool
    calls: int
    note: str = ""


def converse(
    tests: LiveProcess, solution: LiveProcess, wall_s: float, start_s: float | None = None
) -> Exchange:
    """Relay until the test process's verdict. With ``start_s``, the test process says
    ``READY`` once it has started (pytest imported, tests collected): the solution's
    ``wall_s`` counts from then, and the whole conversation stays within ``start_s``; a test
    process that is not ready by then is a harness failure, not the solution's."""
    begin = time.monotonic()
    end = begin + (wall_s if start_s is None else start_s)
    deadline = end
    waiting_for_ready = start_s is not None
    from_tests = LineReader(tests.stdout_fd, MAX_LINE)
    from_solution = LineReader(solution.stdout_fd, MAX_LINE)
    calls = 0
    solution_gone = False
    while True:
        try:
            line = from_tests.readline(deadline)
        except Deadline:
            if waiting_for_ready:
                return Exchange(None, False, calls, "the test process did not start in time")
            return Exchange(None, True, calls, "deadline while the tests ran")
        except TooLong as exc:
            return Exchange(None, False, calls, f"test process: {exc}")
        if line is None:
            return Exchange(None, False, calls, "test process ended without a verdict")
        if line.startswith(b"END "):
            return Exchange(read_verdict(line[4:]), False, calls)
        if line == b"READY" and waiting_for_ready:
            waiting_for_ready = False
            deadline = min(time.monotonic() + wall_s, end)
            continue
        if not line.startswith(b"REQ "):
            return Exchange(None, False, calls, "test process wrote an unknown message")
        calls += 1
        reply: dict[str, Any]
        if solution_gone:
            reply = {"error": "the solution process has ended"}
        else:
            try:
                reply = ask(solution, from_solution, line[4:], deadline)
            except Deadline:
                return Exchange(None, True, calls, "deadline while the solution ran")
            if "gone" in reply:
                solution_gone = True
                reply = {"error": reply["gone"]}
        try:
            if not write_all(tests.stdin_fd, encode_reply(reply), deadline):
                return Exchange(None, False, calls, "test process stopped reading")
        except Deadline:  # the tests were still busy with an earlier answer
            return Exchange(None, True, calls, "deadline while the tests ran")


def ask(
    solution: LiveProcess, reader: LineReader, request: bytes, deadline: float
) -> dict[str, Any]:
    """The solution's answer to ``request``; raises ``Deadline`` when the solution neither
    takes the request nor answers in time (its failure: it ran out its own wall clock)."""
    if not write_all(solution.stdin_fd, request + b"\n", deadline):
        return {"gone": "the solution process has ended"}
    try:
        line = reader.readline(deadline)
    except TooLong:
        return {"gone": "the solution's answer was too long"}
    if line is None:
        return {"gone": "the solution process has ended"}
    return sanitize(line)


def sanitize(line: bytes) -> dict[str, Any]:
    """Exactly ``{"ok": <wire value>}`` or ``{"error": str}``; anything else is an error."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return {"error": "malformed answer from the solution process"}
    if type(message) is dict and set(message) == {"ok"}:
        return {"ok": message["ok"]}  # decoded with exact types by the test process
    if type(message) is dict and set(message) == {"error"} and type(message["error"]) is str:
        return {"error": message["error"][:2000]}
    return {"error": "malformed answer from the solution process"}


def read_verdict(payload: bytes) -> list[bool] | None:
    try:
        message = json.loads(payload)
    except ValueError:
        return None
    results = message.get("results") if type(message) is dict else None
    if type(results) is not list or not all(type(r) is bool for r in results):
        return None
    return list(results)


def encode_reply(reply: dict[str, Any]) -> bytes:
    try:
        return json.dumps(reply).encode() + b"\n"
    except (ValueError, RecursionError):
        return b'{"error": "unencodable answer from the solution process"}\n'
