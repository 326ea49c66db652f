"""Verifiers that misbehave on purpose, importable by worker processes in tests."""

from __future__ import annotations

import asyncio
import ctypes
import os
import time
from pathlib import Path

from pydantic import Field

from rl_verifier import Completion, Task, Verdict, Verifier, VerifierConfig


class Behaviour(Verifier):
    """Does what the completion says: 'ok 0.5', 'spin', 'sleep_c', 'raise', 'exit', ...; a
    task whose reference has ``behave`` does that whatever the completion (for real models)."""

    name = "behaviour"
    default_timeout_s = 1.0

    def verify(self, task: Task, completion: Completion) -> Verdict:
        told = task.reference.get("behave")
        command, _, argument = (told if isinstance(told, str) else completion.text()).partition(" ")
        if command == "ok":
            return Verdict.ok(float(argument))
        if command == "invalid":
            return Verdict.invalid("asked to be invalid")
        if command == "spin":
            while True:  # a pure-Python loop that never yields
                pass
        if command == "sleep_c":
            libc = ctypes.CDLL(None)
            libc.sleep(60)  # a blocking C call
        if command == "raise":
            raise RuntimeError("verifier bug")
        if command == "exit":
            os._exit(3)
        if command == "print":
            print("noise on stdout that must not break the protocol")
            return Verdict.ok(1.0)
        if command == "range":
            return Verdict.ok(7.0)
        if command == "wrong_type":
            return "not a verdict"  # type: ignore[return-value]
        return Verdict.ok(0.0)


class SpawnerConfig(VerifierConfig):
    marker: str = Field(description="File the grandchild writes to after its sleep.")


class Spawner(Verifier):
    """Starts a grandchild that would write a file after 2 s, then hangs."""

    name = "spawner"
    Config = SpawnerConfig
    default_timeout_s = 0.5

    def verify(self, task: Task, completion: Completion) -> Verdict:
        assert isinstance(self.config, SpawnerConfig)
        marker = Path(self.config.marker)
        if os.fork() == 0:
            time.sleep(2)
            marker.write_text("survived")
            os._exit(0)
        time.sleep(60)
        return Verdict.ok(1.0)


class Counting(Verifier):
    """Async; records the highest number of verify calls running at once."""

    name = "counting"
    max_concurrency = 2
    running = 0
    peak = 0

    async def verify(self, task: Task, completion: Completion) -> Verdict:
        cls = type(self)
        cls.running += 1
        cls.peak = max(cls.peak, cls.running)
        await asyncio.sleep(0.02)
        cls.running -= 1
        return Verdict.ok(1.0)


class OpenFails(Verifier):
    """Its open() raises, as a verifier whose resources are missing would."""

    name = "open_fails"

    async def open(self) -> None:
        raise FileNotFoundError("index file missing")

    def verify(self, task: Task, completion: Completion) -> Verdict:
        return Verdict.ok(1.0)


class Sleeper(Verifier):
    """Async and cooperative: sleeps for as many seconds as the completion says."""

    name = "sleeper"
    default_timeout_s = 0.3

    async def verify(self, task: Task, completion: Completion) -> Verdict:
        await asyncio.sleep(float(completion.text()))
        return Verdict.ok(1.0)
