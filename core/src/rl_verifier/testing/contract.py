"""Contract tests every verifier should pass. Subclass, set ``verifier_class``, list cases."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from rl_verifier.base.contracts import ChatMessage, Completion, Score, Status, Task
from rl_verifier.base.errors import UserError
from rl_verifier.base.reward import Reward
from rl_verifier.base.verifier import Verifier, VerifierConfig
from rl_verifier.scoring.engine import ExecutorKind, Sample, make_executor, score_batch

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


@dataclass
class GroupCase:
    """A task's group of completions, the status each must get and, if given, the rewards."""

    task: Task
    completions: list[CompletionInput]
    statuses: list[Status]
    rewards: list[float] | None = None


def score_groups(
    reward: Reward, groups: Sequence[tuple[Task, Sequence[CompletionInput]]]
) -> list[list[Score]]:
    """Score each (task, completions) group through the engine; one list per group."""
    jobs = [
        (reward, Sample(task, as_completion(task, c), i))
        for task, completions in groups
        for i, c in enumerate(completions)
    ]
    scores = asyncio.run(score_batch(jobs, make_executor("inline"))).scores
    out: list[list[Score]] = []
    for _, completions in groups:
        out.append(scores[: len(completions)])
        scores = scores[len(completions) :]
    return out


class GroupVerifierContract:
    """Contract tests of a group verifier (``group = True``): subclass it in a ``Test*``
    class, set ``verifier_class`` and list ``group_cases``."""

    verifier_class: ClassVar[type[Verifier]]
    config: ClassVar[dict[str, Any]] = {}
    order_invariant: ClassVar[bool] = True  # a completion's verdict ignores its position

    def group_cases(self) -> list[GroupCase]:
        """Representative groups with the status (and reward) of each completion."""
        raise NotImplementedError("list at least one GroupCase with status ok")

    def make(self, **overrides: Any) -> Verifier:
        return self.verifier_class({**self.config, **overrides})

    def test_declares_group_metadata(self) -> None:
        meta = self.verifier_class.metadata()
        assert meta.group, "a group verifier sets group = True"
        assert meta.name.isidentifier() and meta.description
        assert meta.min_group_size >= 1 and meta.default_timeout_s > 0
        low, high = self.make().bounds()
        assert math.isfinite(low) and math.isfinite(high) and low <= high

    def test_config_rejects_unknown_key(self) -> None:
        with pytest.raises(UserError, match="unknown config key 'no_such_key_xyz'"):
            self.make(no_such_key_xyz=1)

    def test_config_hash_ignores_execution_settings(self) -> None:
        assert self.make().config_hash == self.make().config_hash
        assert self.make(timeout_s=1.5).config_hash == self.make().config_hash

    def test_group_cases_get_expected_statuses(self) -> None:
        cases = self.group_cases()
        assert any(Status.OK in c.statuses for c in cases), "list a group with status ok"
        groups = score_groups(Reward.of(self.make()), [(c.task, c.completions) for c in cases])
        for case, scores in zip(cases, groups, strict=True):
            assert len(case.statuses) == len(case.completions) == len(scores)
            got = [(s.status, s.error) for s in scores]
            assert [s.status for s in scores] == case.statuses, f"{case.task.id}: {got}"
            assert [s.sample_index for s in scores] == list(range(len(scores)))
            if case.rewards is not None:
                assert [s.reward for s in scores] == pytest.approx(case.rewards, abs=1e-9)

    def test_order_of_the_group_does_not_change_verdicts(self) -> None:
        if not self.order_invariant:
            pytest.skip("declared order-dependent")
        case = next(c for c in self.group_cases() if Status.OK in c.statuses)
        reward = Reward.of(self.make())
        [forward, backward] = score_groups(
            reward, [(case.task, case.completions), (case.task, case.completions[::-1])]
        )
        assert [s.reward for s in forward] == pytest.approx([s.reward for s in backward][::-1])

    def test_one_completion_alone_is_a_clear_error(self) -> None:
        verifier = self.make()
        if verifier.min_group_size <= 1:
            pytest.skip("judges groups of one")
        case = self.group_cases()[0]
        [[score]] = score_groups(Reward.of(verifier), [(case.task, case.completions[:1])])
        assert score.status is Status.ERROR and score.error and "group" in score.error
        with pytest.raises(UserError, match="judges a group"):
            verifier.verify(case.task, as_completion(case.task, case.completions[0]))

    def test_composes_with_a_per_sample_verifier(self) -> None:
        from rl_verifier.builtin.plugin import ExactMatch

        case = next(c for c in self.group_cases() if Status.OK in c.statuses)
        group, exact = self.make(), ExactMatch()
        alone = score_groups(Reward.of(group), [(case.task, case.completions)])[0]
        spec = f"0.5*{group.name} + 0.5*{exact.name}"
        versions = {group.name: "0", exact.name: "0"}
        mixed = Reward(spec, {group.name: group, exact.name: exact}, versions)
        [both] = score_groups(mixed, [(case.task, case.completions)])
        for one, combined in zip(alone, both, strict=True):
            assert combined.components[group.name] == pytest.approx(one.reward)
            if combined.status is Status.OK:
                expected = 0.5 * one.reward + 0.5 * combined.components[exact.name]
                assert combined.reward == pytest.approx(expected)

    def test_junk_in_a_group_never_raises(self) -> None:
        task = self.group_cases()[0].task
        junk = junk_completions()
        [scores] = score_groups(Reward.of(self.make()), [(task, junk)])
        assert len(scores) == len(junk)
        for score in scores:
            assert score.status in (Status.OK, Status.INVALID), score.error

    def test_tiny_deadline_gives_timeout_status(self) -> None:
        case = self.group_cases()[0]
        hurried = Reward.of(self.make(timeout_s=1e-4))
        [scores] = score_groups(hurried, [(case.task, case.completions)])
        for score, expected in zip(scores, case.statuses, strict=True):
            assert score.status in (Status.TIMEOUT, expected), score.error


def comparable(value: Any) -> Any:
    """JSON-shaped view, so in-process and cross-process info compare equal."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): comparable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [comparable(v) for v in value]
    return value
