"""verifiers 0.4 (``verifiers.v1``): the env ``rl-verifier-group`` judges a task's attempts
as one group, on real v1 ``Episode``/``Trace`` objects and the real ``Env`` machinery
(config narrowing by env id, taskset loading); the agents' model runs are stood in for by
traces with a final reply. The group verifiers are test classes registered per test."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import verifiers.v1 as vf
from rlv_group_verifiers import ShortestFirst
from rlv_test_verifiers import Behaviour
from verifiers.v1.utils.loaders import environment_class, load_environment, resolve_env_config

from rl_verifier import Completion, Task, UserError, Verdict, Verifier
from rl_verifier.integrations.prime_verifiers import reward_function
from rl_verifier.integrations.prime_verifiers_group import VerifierGroupEnv

Register = Callable[[type[Verifier]], type[Verifier]]
ENV_ID = "rl-verifier-group"


class Stalling(Verifier):
    """A group verifier that never answers within its deadline."""

    name = "stalling"
    group = True
    default_timeout_s = 0.05

    async def verify_group(self, task: Task, completions: Sequence[Completion]) -> list[Verdict]:
        await asyncio.sleep(30)
        return [Verdict.ok(1.0) for _ in completions]


def group_env(tmp_path: Path, verifier: str | None = None, **env: Any) -> Any:
    """The env as ``vf-eval --env.id rl-verifier-group`` builds it, over one task of ours."""
    tasks = tmp_path / "tasks.jsonl"
    task = {"id": "hi", "prompt": "Say hi.", "verifier": verifier, "reference": {}}
    tasks.write_text(json.dumps(task) + "\n")
    task_config = env.pop("task", {})
    taskset = {"id": "rl-verifier-tasks", "source": str(tasks), "task": task_config}
    config = resolve_env_config({"id": ENV_ID, "executor": "inline", "taskset": taskset, **env})
    return load_environment(config)


def attempt(task: Any, reply: str, failed: Exception | None = None) -> Any:
    """A finished attempt's trace as v1's rollout leaves it before ``finalize``."""
    trace = vf.Trace(
        task=vf.TraceTask(type=type(task).__name__, data=task.data),
        agent=vf.AgentInfo(config=vf.AgentConfig()),
        root_reply=reply,
    )
    trace.stop("agent_completed")
    trace.ok = failed is None
    if failed is not None:
        trace.record_error(failed)
    return trace


def finalized(env: Any, *traces: Any) -> list[Any]:
    task = traces[0].task
    episode = vf.Episode(task=task, traces=list(traces))
    asyncio.run(env.finalize(first_task(env), episode))
    return episode.traces


def first_task(env: Any) -> Any:
    return next(iter(env.taskset.take(1)))


def test_the_env_id_names_our_group_env_and_refuses_groups_too_small(
    tmp_path: Path, register_verifier: Register
) -> None:
    register_verifier(ShortestFirst)
    assert environment_class("rl-verifier-tasks", ENV_ID) is VerifierGroupEnv
    env = group_env(tmp_path, spec="shortest_first", n=3)
    assert isinstance(env, VerifierGroupEnv) and env.config.n == 3
    with pytest.raises(UserError, match=r"'shortest_first' judges at least 2 .*--env\.n"):
        group_env(tmp_path, spec="shortest_first", n=1)
    with pytest.raises(UserError, match=r"--env\.n"):  # our taskset's own spec counts too
        group_env(tmp_path, task={"spec": "shortest_first"}, n=1)


def test_run_starts_n_attempts_of_the_task_with_its_own_rewards_deferred(
    tmp_path: Path, register_verifier: Register
) -> None:
    register_verifier(ShortestFirst)
    env = group_env(tmp_path, spec="shortest_first", n=3)
    task = first_task(env)
    started: list[Any] = []

    class Seat:
        async def run(self, given: Any) -> None:
            started.append(given)

    class Agents:
        agent = Seat()

    asyncio.run(env.run(task, Agents()))
    assert len(started) == 3 and all(t.scoring_deferred for t in started)
    assert not task.scoring_deferred
    trace = attempt(task, "hi")
    asyncio.run(started[0].score(trace))  # the task's own per-rollout reward does not run
    assert trace.rewards == {} and trace.ok


def test_finished_attempts_are_ranked_together_and_a_failed_one_is_left_out(
    tmp_path: Path, register_verifier: Register
) -> None:
    register_verifier(ShortestFirst)
    env = group_env(tmp_path, spec="shortest_first", n=4)
    task = first_task(env)
    calls = ShortestFirst.calls
    traces = finalized(
        env,
        attempt(task, "hello there"),
        attempt(task, "hi"),
        attempt(task, "", failed=vf.HarnessError("the agent crashed")),
        attempt(task, "hey you"),
    )
    assert ShortestFirst.calls == calls + 1  # one judgement for the whole group
    longest, shortest, failed, middle = traces
    assert [t.reward for t in (shortest, middle, longest)] == [1.0, 0.5, 0.0]
    for trace in (shortest, middle, longest):
        assert trace.ok and trace.metrics["rlv/judged"] == 1.0
        assert trace.metrics["rlv/in_group"] == 1.0 and trace.metrics["rlv/group_size"] == 3.0
    assert failed.rewards == {"rlv": None} and "rlv/judged" not in failed.metrics
    assert failed.metrics["rlv/in_group"] == 0.0
    assert failed.info["rlv"] == "left out of the group: the attempt failed (HarnessError)"
    assert failed.last_error.message == "the agent crashed"  # its own error stays last


def test_a_sibling_whose_score_errors_or_times_out_gets_a_task_error_not_a_zero(
    tmp_path: Path, register_verifier: Register
) -> None:
    register_verifier(ShortestFirst)
    register_verifier(Behaviour)
    env = group_env(tmp_path, spec="0.5*shortest_first + 0.5*behaviour", n=3)
    task = first_task(env)
    short, broken, long = finalized(
        env, attempt(task, "ok 1"), attempt(task, "raise"), attempt(task, "ok 0.5")
    )
    assert short.reward == 1.0 and long.reward == 0.25
    assert long.metrics["rlv/shortest_first"] == 0.0 and long.metrics["rlv/behaviour"] == 0.5
    assert not broken.ok and broken.rewards == {"rlv": None}
    assert broken.metrics["rlv/judged"] == 0.0
    assert broken.errors[-1].type == "TaskError"
    assert "rl-verifier error" in broken.errors[-1].message
    assert broken.stop_condition == "agent_completed" and not broken.is_timeout

    register_verifier(Stalling)
    env = group_env(tmp_path, spec="stalling", n=2)
    for trace in finalized(env, attempt(task, "a"), attempt(task, "b")):
        assert not trace.ok and trace.rewards == {"rlv": None}
        assert trace.is_timeout and trace.stop_condition == "scoring_timeout"
        assert "rl-verifier timeout" in trace.errors[-1].message


def test_fewer_finished_attempts_than_the_verifier_needs_is_an_error_on_each(
    tmp_path: Path, register_verifier: Register
) -> None:
    """Here the spec is the task's own verifier (``--env.spec`` unset)."""
    register_verifier(ShortestFirst)
    env = group_env(tmp_path, verifier="shortest_first", n=3)
    task = first_task(env)
    crash = vf.HarnessError("the agent crashed")
    left, alone, right = finalized(
        env, attempt(task, "", crash), attempt(task, "hi"), attempt(task, "", crash)
    )
    assert not alone.ok and alone.rewards == {"rlv": None}
    assert alone.errors[-1].type == "TaskError"
    assert alone.errors[-1].message == (
        f"{ENV_ID} scoring: verifier 'shortest_first' judges at least 2 completions of a task "
        "together; 1 of the 3 attempts finished: no reward"
    )
    for failed in (left, right):
        assert failed.rewards == {"rlv": None} and "left out" in failed.info["rlv"]


def test_a_reward_function_with_a_group_spec_names_the_group_env(
    register_verifier: Register,
) -> None:
    register_verifier(ShortestFirst)
    reward = reward_function("shortest_first", executor="inline")
    data = vf.TaskData(id="hi", prompt="Say hi.")
    with pytest.raises(UserError, match=f"judges a group .*--env.id {ENV_ID}"):
        asyncio.run(reward(data, attempt(vf.Task(data), "hi")))
    reward.scorer.close()
