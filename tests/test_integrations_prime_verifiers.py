"""PrimeIntellect verifiers 0.4 (``verifiers.v1``): our reward functions and taskset.

``vf-eval`` (v1's own eval entry point, unmodified) runs our taskset end to end: its
``null`` chat harness (a uv script using the official ``openai`` client) talks through
v1's interception server to a small OpenAI-compatible server written here (real HTTP;
``rlv serve`` has no ``/v1/chat/completions`` on this branch). That server is the one
stand-in: it replies with what each prompt asks for, so the statuses are known.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import verifiers.v1 as vf
from rlv_contexts import in_running_loop, on_thread
from rlv_plugin_site import env_with_behaviour
from rlv_test_verifiers import Behaviour
from verifiers.v1.utils.loaders import load_taskset, taskset_config_type

from rl_verifier import UserError, Verifier
from rl_verifier.integrations.prime_verifiers import (
    VerifierTask,
    VerifierTaskData,
    VerifierTaskset,
    VerifierUnfinished,
    reward_function,
)

Register = Callable[[type[Verifier]], type[Verifier]]
TASKSET_ID = "rl-verifier-tasks"
TASKS = [
    {"id": "right", "prompt": "Reply: <answer>Paris</answer>", "verifier": "exact_match",
     "reference": {"answer": "Paris"}},
    {"id": "wrong", "prompt": "Reply: <answer>Lyon</answer>", "verifier": "exact_match",
     "reference": {"answer": "Paris"}},
    {"id": "hang", "prompt": "Reply: spin", "verifier": "behaviour"},
    {"id": "broken", "prompt": "Reply: raise", "verifier": "behaviour"},
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


class ChatCompletions(BaseHTTPRequestHandler):
    """``POST /v1/chat/completions`` (plain or streamed): replies with the text after
    'Reply: ' in the last message."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        asked = str(body["messages"][-1]["content"])
        text = asked.rsplit("Reply: ", 1)[-1] if "Reply: " in asked else "?"
        head = {"id": "chatcmpl-test", "created": int(time.time()), "model": body["model"]}
        usage = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
        if not body.get("stream"):
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            self.send(
                "application/json",
                json.dumps(
                    {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
                ),
            )
            return
        chunk = {**head, "object": "chat.completion.chunk"}
        events = [
            {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {**chunk, "choices": [], "usage": usage},
        ]
        lines = [f"data: {json.dumps(event)}\n\n" for event in events] + ["data: [DONE]\n\n"]
        self.send("text/event-stream", "".join(lines))

    def send(self, kind: str, text: str) -> None:
        data = text.encode()
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def chat_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), ChatCompletions)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()


def test_the_chat_server_speaks_openai(chat_server: str) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=chat_server, api_key="test")
    messages = [{"role": "user", "content": "Reply: 42"}]
    done = client.chat.completions.create(model="scripted", messages=messages)  # type: ignore[arg-type]
    assert done.choices[0].message.content == "42"
    chunks = client.chat.completions.create(model="scripted", messages=messages, stream=True)  # type: ignore[arg-type]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "42"


@pytest.mark.slow
def test_vf_eval_runs_our_taskset_end_to_end(chat_server: str, tmp_path: Path) -> None:
    uv = shutil.which(
        "uv", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    )
    if uv is None:
        pytest.skip("v1's chat harness runs as a uv script; uv is not installed")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    config = {
        "env": {
            "taskset": {
                "id": TASKSET_ID,
                "source": str(tasks),
                "task": {"settings": {"behaviour": {"timeout_s": 1.0}}, "workers": 2},
            },
            "agent": {"harness": {"id": "null"}, "runtime": {"type": "subprocess"}},
        },
        "model": "scripted",
        "client": {"base_url": chat_server, "api_key_var": "RLV_TEST_KEY"},
        "num_rollouts": 1,
        "rich": None,
        "push": False,
        "output_dir": str(tmp_path / "out"),
    }
    (tmp_path / "eval.json").write_text(json.dumps(config))
    env = env_with_behaviour(tmp_path / "site")
    env.update(RLV_TEST_KEY="test", PATH=f"{Path(uv).parent}{os.pathsep}{env['PATH']}")
    vf_eval = Path(sys.executable).with_name("vf-eval")
    done = subprocess.run(
        [str(vf_eval), "@", str(tmp_path / "eval.json")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [path] = list((tmp_path / "out").rglob("traces.jsonl"))
    traces = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        for trace in record.get("traces", [record]):
            traces[trace["task"]["data"]["id"]] = trace
    assert set(traces) == {t["id"] for t in TASKS}
    right, wrong, hang, broken = (traces[t["id"]] for t in TASKS)
    assert right["ok"] and right["rewards"]["rlv"]["score"] == 1.0
    assert wrong["ok"] and wrong["rewards"]["rlv"]["score"] == 0.0
    assert right["metrics"]["rlv/judged"] == wrong["metrics"]["rlv/judged"] == 1.0
    # not a reward of 0: an error on the rollout, the reward left unscored
    for failed in (hang, broken):
        assert not failed["ok"] and failed["rewards"]["rlv"] is None
        assert failed["errors"][-1]["type"] == "TaskError"
    assert hang["is_timeout"] and hang["stop_condition"] == "scoring_timeout"
    assert "rl-verifier timeout" in hang["errors"][-1]["message"]
    assert "rl-verifier error" in broken["errors"][-1]["message"]
    # the agent had finished: v1 keeps the first stop condition
    assert broken["stop_condition"] == "agent_completed" and not broken["is_timeout"]
