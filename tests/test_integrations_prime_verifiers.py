"""PrimeIntellect verifiers 0.4 (``verifiers.v1``): our reward functions and taskset.

``vf-eval`` (v1's own eval entry point, unmodified) runs our taskset end to end: its
``null`` chat harness (a uv script using the official ``openai`` client) talks through
v1's interception server to ``rlv serve``'s OpenAI-compatible ``/v1`` with SmolLM2. The
uv script's packages come from wheels downloaded at set-up; nothing is downloaded here.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import verifiers.v1 as vf
from rlv_contexts import in_running_loop, on_thread
from rlv_plugin_site import env_with_behaviour
from rlv_test_verifiers import Behaviour
from verifiers.v1.utils.loaders import load_taskset, taskset_config_type

from rl_verifier import Scorer, Task, UserError, Verifier
from rl_verifier.integrations.prime_verifiers import (
    VerifierTask,
    VerifierTaskData,
    VerifierTaskset,
    VerifierUnfinished,
    reward_function,
)
from rl_verifier_server.launch import LocalServer
from rl_verifier_server.models import smollm2

Register = Callable[[type[Verifier]], type[Verifier]]
TASKSET_ID = "rl-verifier-tasks"
SMOLLM2 = smollm2.SMOLLM2_NAME
ASK = "What is the capital of France? Reply as <answer>CITY</answer>."
SMOLLM2_TASKS = [
    {"id": "capital", "prompt": ASK, "verifier": "exact_match", "reference": {"answer": "Paris"}},
    {"id": "broken", "prompt": ASK, "verifier": "exact_match"},  # no reference: error
    {"id": "hang", "prompt": ASK, "verifier": "behaviour", "reference": {"behave": "spin"}},
]  # fmt: skip


def trace_of(data: Any, reply: str) -> Any:
    """A v1 trace whose agent replied ``reply``."""
    return vf.Trace(
        task=vf.TraceTask(type="VerifierTask", data=data),
        agent=vf.AgentInfo(config=vf.AgentConfig()),
        root_reply=reply,
    )


def test_our_task_sets_are_v1_tasksets_by_id() -> None:
    config_type = taskset_config_type(TASKSET_ID)
    config = config_type(id=TASKSET_ID, source="taskset:exact_match-example")
    taskset = load_taskset(config)
    assert isinstance(taskset, VerifierTaskset) and taskset.task_type() is VerifierTask
    first, second = list(taskset.take(2))
    assert isinstance(first.data, VerifierTaskData)
    assert first.data.idx == 0 and first.data.id == "sum-0" and "<answer>" in first.data.prompt
    assert second.data.idx == 1 and set(second.data.reference) == {"answer"}
    with pytest.raises(UserError, match="source"):
        list(load_taskset(config_type(id=TASKSET_ID)))


def test_a_reward_spec_as_a_reward_method_of_any_v1_task() -> None:
    class Capital(vf.Task):  # type: ignore[misc]
        correct = reward_function("exact_match", executor="inline", weight=2.0)

    class Data(vf.TaskData):  # type: ignore[misc]
        answer: str

    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital?"}]
    task = Capital(Data(id="c", prompt=chat, answer="Paris"))
    assert [fn.__name__ for fn in task.hooks("reward")] == ["correct"]
    good, bad = trace_of(task.data, "<answer>Paris</answer>"), trace_of(task.data, "Lyon")
    asyncio.run(task.score(good))
    asyncio.run(task.score(bad))
    assert good.rewards["correct"].score == 1.0 and good.reward == 2.0  # weighted
    assert bad.reward == 0.0 and bad.metrics["rlv/judged"] == 1.0


def test_scoring_off_the_main_thread_and_inside_a_running_loop(
    register_verifier: Register,
) -> None:
    """v1 awaits reward functions on its rollout loop: the hang is killed at its 1 s
    deadline, the loop keeps running, and the failure raises (v1 records it)."""
    register_verifier(Behaviour)
    func = reward_function("behaviour", timeout_s=1.0, workers=2)
    task = VerifierTask(VerifierTaskData(id="b", prompt="Do as told."))

    async def both() -> list[Any]:
        traces = [trace_of(task.data, reply) for reply in ("ok 0.5", "spin")]
        results = await asyncio.gather(*(func(task, t) for t in traces), return_exceptions=True)
        return [*results, traces[1].stop_condition]

    try:
        threaded = on_thread(lambda: asyncio.run(both()))
        looped, ticks = in_running_loop(both)
        for results in (threaded, looped):
            assert results[0] == 0.5
            assert isinstance(results[1], VerifierUnfinished) and "timeout" in str(results[1])
            assert results[2] == "scoring_timeout"
        assert ticks >= 5
    finally:
        func.scorer.close()


@pytest.fixture(scope="module")
def smollm2_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``rlv serve`` with SmolLM2-135M-Instruct: its OpenAI-compatible base URL."""
    if not smollm2.is_available():
        pytest.fail(f"SmolLM2 is part of the test set-up: {smollm2.INSTALL_HINT}")
    smollm2.ensure_smollm2()
    data = tmp_path_factory.mktemp("serve")
    with LocalServer(data, preload=(SMOLLM2,), log_path=data / "server.log") as running:
        yield f"{running.url}/v1"


def offline_uv(folder: Path) -> dict[str, str]:
    """uv settings that install v1's chat script from the wheels ``make`` downloaded at
    set-up (tools/vf_script_wheels.py) into a fresh cache; any download fails."""
    wheels = Path(os.environ.get("RLV_VF_WHEELS", Path(sys.prefix) / "wheels" / "vf-chat"))
    if not (wheels / "requirements.txt").exists():
        pytest.fail(f"no wheels for v1's chat script in {wheels}: run make install "
                    "(python tools/vf_script_wheels.py DIR; RLV_VF_WHEELS=DIR)")  # fmt: skip
    (folder / "empty-index").mkdir(parents=True)
    blocked = "http://127.0.0.1:9"  # a closed port: a download attempt fails the run
    return {
        "UV_CACHE_DIR": str(folder / "uv-cache"),
        "UV_DEFAULT_INDEX": (folder / "empty-index").as_uri(),
        "UV_FIND_LINKS": str(wheels),
        "UV_PYTHON_DOWNLOADS": "never",
        "HTTPS_PROXY": blocked, "HTTP_PROXY": blocked, "https_proxy": blocked,
        "http_proxy": blocked, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
    }  # fmt: skip


@pytest.mark.slow
def test_vf_eval_runs_our_taskset_against_smollm2(smollm2_server: str, tmp_path: Path) -> None:
    """v1's own ``vf-eval`` and chat harness, its client pointed at ``rlv serve``'s /v1 with
    SmolLM2: judged replies get our scorer's reward; a verifier error or timeout is an
    error on the rollout, never a reward of 0."""
    uv = Path(sys.executable).with_name("uv")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in SMOLLM2_TASKS))
    config = {
        "env": {
            "taskset": {
                "id": TASKSET_ID,
                "source": str(tasks),
                "task": {"settings": {"behaviour": {"timeout_s": 1.0}}, "workers": 2},
            },
            "agent": {"harness": {"id": "null"}, "runtime": {"type": "subprocess"}},
        },
        "model": SMOLLM2,
        "client": {"base_url": smollm2_server, "api_key_var": "RLV_TEST_KEY"},
        "sampling": {"max_tokens": 12, "temperature": 0.7},
        "num_rollouts": 1,
        "rich": None,
        "push": False,
        "output_dir": str(tmp_path / "out"),
    }
    (tmp_path / "eval.json").write_text(json.dumps(config))
    env = env_with_behaviour(tmp_path / "site")
    env.update(
        offline_uv(tmp_path), RLV_TEST_KEY="local", PATH=f"{uv.parent}{os.pathsep}{env['PATH']}"
    )
    vf_eval = Path(sys.executable).with_name("vf-eval")
    done = subprocess.run([str(vf_eval), "@", str(tmp_path / "eval.json")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [path] = list((tmp_path / "out").rglob("traces.jsonl"))
    traces = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        for trace in record.get("traces", [record]):
            traces[trace["task"]["data"]["id"]] = trace
    assert set(traces) == {t["id"] for t in SMOLLM2_TASKS}
    judged = traces["capital"]
    replies = [n["message"] for n in judged["nodes"] if n["message"]["role"] == "assistant"]
    assert judged["calls"][-1]["model"] == SMOLLM2  # SmolLM2 answered, through v1's proxy
    ours = Scorer(None, executor="inline").score(Task.model_validate(SMOLLM2_TASKS[0]),
                                                 replies[-1]["content"])  # fmt: skip
    assert ours.status.judged and judged["rewards"]["rlv"]["score"] == ours.reward
    assert judged["ok"] and judged["metrics"]["rlv/judged"] == 1.0
    broken, hang = traces["broken"], traces["hang"]
    for failed in (hang, broken):  # an error on the rollout, the reward left unscored
        assert not failed["ok"] and failed["rewards"]["rlv"] is None
        assert failed["errors"][-1]["type"] == "TaskError"
        assert failed["metrics"]["rlv/judged"] == 0.0
    assert hang["is_timeout"] and hang["stop_condition"] == "scoring_timeout"
    assert "rl-verifier timeout" in hang["errors"][-1]["message"]
    assert "rl-verifier error" in broken["errors"][-1]["message"]
    # the agent had finished: v1 keeps the first stop condition
    assert broken["stop_condition"] == "agent_completed" and not broken["is_timeout"]
