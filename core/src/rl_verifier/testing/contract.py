"""Contract tests every verifier should pass. Subclass, set ``verifier_class``, list cases."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from rl_verifier.contracts import ChatMessage, Completion, Score, Status, Task
from rl_verifier.engine import ExecutorKind, Sample, make_executor, score_batch
from rl_verifier.errors import UserError
from rl_verifier.reward import Reward
from rl_verifier.verifier import Verifier, VerifierConfig

CompletionInput = str | list[dict[str, Any]] | list[ChatMessage]


@dataclass
class Case:
    """A task, a completion, the status it must get and, if given, its exact reward."""

    task: Task
    completion: CompletionInput
    status: Status
    reward: float | None = None


def as_completion(task: Task, completion: CompletionInput) -> Completion:
    return Completion.model_validate({"task_id": task.id, "completion": completion})


def score_once(
    verifier: Verifier,
    pairs: Sequence[tuple[Task, CompletionInput]],
    executor: ExecutorKind = "inline",
    workers: int | None = None,
) -> list[Score]:
    """Score (task, completion) pairs with one verifier; results in input order."""
    reward = Reward.of(verifier)
    jobs = [(reward, Sample(t, as_completion(t, c), 0)) for t, c in pairs]
    result = asyncio.run(score_batch(jobs, make_executor(executor, workers)))
    return result.scores


def junk_completions() -> list[CompletionInput]:
    """Completions no verifier should crash on."""
    return [
        "",
        " \n\t ",
        "x" * 1_000_000,
        "∀ε>0 ∃δ — ünïcödé 🙂 \u202e\u0000 控制",
        "}{][)(\\\"'`<>&;|$",
        [],
        [{"role": "user", "content": "no assistant turn"}],
        [{"role": "assistant", "content": None}],
        [{"role": "assistant", "content": 12345}],
        [{"role": "assistant", "content": [{"type": "text", "text": "parts"}]}],
    ]


class VerifierContract:
    """Base class of a verifier's contract tests. Subclass it in a ``Test*`` class."""

    verifier_class: ClassVar[type[Verifier]]
    config: ClassVar[dict[str, Any]] = {}
    can_be_invalid: ClassVar[bool] = True  # False for checks that judge any text

    def cases(self) -> list[Case]:
        """Representative samples with the status (and reward) each must get."""
        raise NotImplementedError("list at least one Case with status ok and one invalid")

    def make(self, **overrides: Any) -> Verifier:
        return self.verifier_class({**self.config, **overrides})

    # Declarations and config -------------------------------------------------------

    def test_declares_metadata(self) -> None:
        cls = self.verifier_class
        meta = cls.metadata()
        assert meta.name.isidentifier(), f"name {meta.name!r} must be an identifier"
        assert meta.description, "give the verifier a description (or a docstring)"
        low, high = self.make().bounds()
        assert math.isfinite(low) and math.isfinite(high) and low <= high
        assert meta.default_timeout_s > 0
        assert issubclass(cls.Config, VerifierConfig)

    def test_config_rejects_unknown_key(self) -> None:
        with pytest.raises(UserError, match="unknown config key 'no_such_key_xyz'"):
            self.make(no_such_key_xyz=1)

    def test_config_schema_and_hash(self) -> None:
        schema = self.verifier_class.Config.model_json_schema()
        assert schema["type"] == "object"
        assert self.make().config_hash == self.make().config_hash
        assert self.make(timeout_s=1.5).config_hash == self.make().config_hash

    # Judgement --------------------------------------------------------------------

    def _checked_cases(self) -> list[Case]:
        cases = self.cases()
        statuses = {case.status for case in cases}
        assert Status.OK in statuses, "list at least one case with status ok"
        if self.can_be_invalid:
            assert Status.INVALID in statuses, "list at least one case with status invalid"
        return cases

    def test_cases_get_expected_status(self) -> None:
        cases = self._checked_cases()
        scores = score_once(self.make(), [(c.task, c.completion) for c in cases])
        for case, score in zip(cases, scores, strict=True):
            label = f"{case.task.id}: {str(case.completion)[:80]!r}"
            assert score.status is case.status, f"{label}: {score.status} ({score.error})"
            if case.reward is not None:
                assert score.reward == pytest.approx(case.reward, abs=1e-9), label

    def test_process_executor_agrees_with_inline(self) -> None:
        cases = self._checked_cases()
        pairs = [(c.task, c.completion) for c in cases]
        inline = score_once(self.make(), pairs, "inline")
        isolated = score_once(self.make(), pairs, "process", workers=2)
        for a, b in zip(inline, isolated, strict=True):
            assert (a.status, a.reward, a.components) == (b.status, b.reward, b.components)
            assert comparable(a.info) == comparable(b.info)

    def test_cases_finish_within_declared_timeout(self) -> None:
        cases = self._checked_cases()
        verifier = self.make()
        scores = score_once(verifier, [(c.task, c.completion) for c in cases])
        slowest = max(score.elapsed_s for score in scores)
        assert slowest < verifier.timeout_s, f"a case took {slowest:.2f}s"

    def test_tiny_deadline_gives_timeout_status(self) -> None:
        case = self._checked_cases()[0]
        verifier = self.make(timeout_s=1e-4)
        [score] = score_once(verifier, [(case.task, case.completion)], "process", workers=1)
        assert score.status in (Status.TIMEOUT, case.status), score.error

    def test_junk_never_raises_and_is_judged(self) -> None:
        task = self._checked_cases()[0].task
        junk = junk_completions()
        scores = score_once(self.make(), [(task, j) for j in junk])
        for completion, score in zip(junk, scores, strict=True):
            assert score.status in (Status.OK, Status.INVALID), (
                f"{str(completion)[:60]!r}: {score.status} ({score.error})"
            )


def comparable(value: Any) -> Any:
    """JSON-shaped view, so in-process and cross-process info compare equal."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): comparable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [comparable(v) for v in value]
    return value
