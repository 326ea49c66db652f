"""Calling a verifier, here or in another process: the one codec for both sides.

The engine's out-of-process executors (worker processes, Ray actors) send a verifier's
class path and settings once (``open``), then one ``verify`` request per sample, and
read back plain-JSON answers. Both ends build and read those messages only here.
"""

from __future__ import annotations

import asyncio
import importlib
import traceback
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from rl_verifier.base.contracts import Completion, Task, Verdict
from rl_verifier.base.errors import UserError
from rl_verifier.base.verifier import Verifier

Message = dict[str, Any]


def describe(exc: BaseException) -> str:
    """``TypeName: message`` (or the type name alone)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def coerce_verdict(value: Any) -> Verdict:
    """Accept a Verdict, a bare reward, or a dict with Verdict's fields."""
    if isinstance(value, Verdict):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float | dict):
        raise TypeError(f"verify() returned {type(value).__name__}, expected a Verdict")
    if isinstance(value, dict):
        return Verdict.model_validate(value)
    return Verdict.ok(float(value))


async def call_verify(verifier: Verifier, task: Task, completion: Completion) -> Verdict:
    """Run ``verify`` (async, or sync in a thread) and coerce its result."""
    value: Any
    if verifier.is_async():
        value = await verifier.verify(task, completion)  # type: ignore[misc]
    else:
        value = await asyncio.to_thread(verifier.verify, task, completion)
    return coerce_verdict(value)


async def call_verify_group(
    verifier: Verifier, task: Task, completions: Sequence[Completion]
) -> list[Verdict]:
    """Run ``verify_group`` (async, or sync in a thread): one verdict per completion."""
    value: Any
    if verifier.is_async():
        value = await verifier.verify_group(task, completions)  # type: ignore[misc]
    else:
        value = await asyncio.to_thread(verifier.verify_group, task, completions)
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise TypeError(f"verify_group() returned {type(value).__name__}, expected a list")
    if len(value) != len(completions):
        raise TypeError(
            f"verify_group() returned {len(value)} verdicts for {len(completions)} completions"
        )
    return [coerce_verdict(v) for v in value]


# Requests (the engine's side) ------------------------------------------------------------


def class_path(cls: type) -> str:
    """``module:qualname`` another process can import."""
    if cls.__module__ == "__main__" or "<locals>" in cls.__qualname__:
        raise UserError(
            f"verifier class {cls.__qualname__} is defined in {cls.__module__} and cannot be "
            "loaded by a worker process; define it at module level in an importable module, "
            "or use the inline executor"
        )
    return f"{cls.__module__}:{cls.__qualname__}"


def open_request(verifier: Verifier) -> Message:
    """What another process needs to build and open ``verifier``; ``key`` names it there."""
    return {
        "op": "open",
        "key": verifier.config_hash + ":" + verifier.name,
        "cls": class_path(type(verifier)),
        "config": verifier.config.model_dump(mode="json"),
    }


def cached_opening(
    openings: dict[int, tuple[Verifier, Message]], verifier: Verifier
) -> Message | Verdict:
    """``verifier``'s open message, built once per verifier object and kept in ``openings``;
    an ``error`` verdict when it cannot be sent to another process."""
    known = openings.get(id(verifier))
    if known is None or known[0] is not verifier:
        try:
            known = openings[id(verifier)] = (verifier, open_request(verifier))
        except UserError as exc:
            return Verdict.errored(str(exc))
    return known[1]


def verify_request(key: str, task: Task, completion: Completion) -> Message | Verdict:
    """The ``verify`` message for one sample, or an ``error`` verdict when the sample cannot
    be encoded (a reference nested past pydantic's depth limit, say): nothing is sent then."""
    try:
        return {
            "op": "verify",
            "key": key,
            "task": task.model_dump(mode="json"),
            "completion": completion.model_dump(mode="json"),
        }
    except Exception as exc:  # noqa: BLE001 - a sample's own data, never a crash
        return Verdict.errored(f"cannot send this sample to a worker: {describe(exc)}")


# Answers (the verifier's side) -----------------------------------------------------------


def load_class(path: str) -> type[Verifier]:
    module_name, _, qualname = path.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    if not (isinstance(target, type) and issubclass(target, Verifier)):
        raise TypeError(f"{path} is not a Verifier subclass")
    return target


async def open_verifier(request: Message) -> Verifier:
    """Build and open the verifier an ``open`` request describes."""
    verifier = load_class(request["cls"])(request["config"])
    await verifier.open()
    return verifier


async def verify_answer(verifier: Verifier, request: Message) -> Message:
    """Judge the sample of a ``verify`` request; a fault is an error answer."""
    try:
        task = Task.model_validate(request["task"])
        completion = Completion.model_validate(request["completion"])
        verdict = await call_verify(verifier, task, completion)
    except Exception as exc:  # noqa: BLE001 - every fault goes back to the caller
        return error_answer(exc)
    return {"ok": True, "verdict": verdict.model_dump(mode="json")}


def error_answer(exc: BaseException) -> Message:
    return {"ok": False, "error": describe(exc), "traceback": traceback.format_exc()}


OK_ANSWER: Message = {"ok": True}


# Reading answers (the engine's side) -----------------------------------------------------


def open_failure(answer: Message) -> Verdict | None:
    """None when an ``open`` succeeded, else the error verdict for its samples."""
    return None if answer["ok"] else Verdict.errored(f"open() failed: {answer['error']}")


def read_verdict(answer: Message) -> Verdict:
    """The verdict in a ``verify`` answer (a dict, or in a batch answer a JSON text); a
    fault or a malformed verdict is ``error``."""
    if not answer["ok"]:
        return Verdict.errored(answer["error"], traceback=answer.get("traceback", ""))
    try:
        if "json" in answer:
            return Verdict.model_validate_json(answer["json"])
        return Verdict.model_validate(answer["verdict"])
    except ValidationError as exc:
        return Verdict.errored(f"verify() returned a malformed verdict: {exc}")
