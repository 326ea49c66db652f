"""rlv reward-server over real HTTP: the typed endpoint answers the rows `rlv verify`
writes; bad requests, deadlines, overload (429), size limits (413), tokens, metrics; and a
client that goes away mid-batch leaves no worker, sandbox or held budget behind."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from click.testing import CliRunner
from rlv_processes import descendants, processes, workers_of_this_process

from rl_verifier import Completion, Score, Task, Verdict, Verifier
from rl_verifier.base.errors import UserError
from rl_verifier.cli.app import cli
from rl_verifier.reward_server import RewardServerLimits, ServerOptions
from rl_verifier.reward_server.serve import BoundServer, bind, serving_in_thread

Register = Callable[[type[Verifier]], type[Verifier]]
MIB = 1024 * 1024

TASKS = [
    {"id": "capital", "prompt": "Capital of France?", "reference": {"answer": "Paris"}},
    {"id": "sum", "prompt": "2+2?", "reference": {"answers": ["4", "four"]}, "extra": 1},
]
COMPLETIONS = [
    {"task_id": "capital", "completion": "<answer>Paris</answer>"},
    {"task_id": "sum", "completion": "<answer>5</answer>"},
    {"task_id": "capital", "completion": [{"role": "assistant", "content": "Lyon"}]},
    {"task_id": "sum", "completion": "it is <answer>four</answer>", "note": "kept out"},
]


class Gated(Verifier):
    """Async; rewards 1 at once for 'go', else once the test opens the gate."""

    name = "gated"
    default_timeout_s = 120
    gate = threading.Event()

    async def verify(self, task: Task, completion: Completion) -> Verdict:
        while completion.text() != "go" and not self.gate.is_set():
            await asyncio.sleep(0.01)
        return Verdict.ok(1.0)


@pytest.fixture
def gated(register_verifier: Register) -> Iterator[threading.Event]:
    """The gated verifier, registered for one test; its gate is opened at the end."""
    register_verifier(Gated)
    Gated.gate.clear()
    yield Gated.gate
    Gated.gate.set()


@contextmanager
def server(
    spec: str, settings: dict[str, Any] | None = None, **options: Any
) -> Iterator[BoundServer]:
    with serving_in_thread(
        ServerOptions(spec=spec, settings=settings or {}, port=0, **options)
    ) as bound:
        yield bound


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    """Poll ``condition`` (a loaded machine is slow; this asserts no speed)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting for: {what}")
        time.sleep(0.05)


def test_typed_endpoint_answers_the_rows_rlv_verify_writes(tmp_path: Path) -> None:
    spec, pairs = "0.7*exact_match + 0.3*format", ["format.pattern=(?s).*<answer>.+</answer>.*"]
    tasks, completions, out = tmp_path / "t.jsonl", tmp_path / "c.jsonl", tmp_path / "s.jsonl"
    tasks.write_text("".join(json.dumps(row) + "\n" for row in TASKS))
    completions.write_text("".join(json.dumps(row) + "\n" for row in COMPLETIONS))
    verified = CliRunner().invoke(
        cli,
        ["-q", "verify", "--verifier", spec, "--config", pairs[0], "--executor", "inline",
         "--tasks", str(tasks), "--completions", str(completions), "--out", str(out)],
    )  # fmt: skip
    assert verified.exit_code == 0, verified.output
    settings = {"format": {"pattern": "(?s).*<answer>.+</answer>.*"}}
    with server(spec, settings, executor="inline") as bound:
        answer = httpx.post(
            f"{bound.url}/v1/score", json={"tasks": TASKS, "completions": COMPLETIONS}
        )
    assert answer.status_code == 200, answer.text
    rows = answer.json()["scores"]
    expected = [json.loads(line) for line in out.read_text().splitlines()]
    assert [drop_time(r) for r in rows] == [drop_time(r) for r in expected]
    scores = [Score.model_validate(row) for row in rows]
    assert [(s.task_id, s.sample_index) for s in scores] == [
        ("capital", 0), ("sum", 0), ("capital", 1), ("sum", 1)
    ]  # fmt: skip
    assert [s.reward for s in scores] == pytest.approx([1.0, 0.3, 0.0, 1.0])
    assert scores[1].components == {"exact_match": 0.0, "format": 1.0}
    assert scores[0].verifier.name == spec and scores[0].verifier.config_hash


def drop_time(row: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in row.items() if key != "elapsed_s"}


def test_bad_requests_are_answered_400_with_what_is_wrong() -> None:
    with server("exact_match", executor="inline") as bound:
        url = f"{bound.url}/v1/score"
        cases = [
            (b"{not json", "not JSON"),
            (b"[1, 2]", "must be a JSON object"),
            (json.dumps({"tasks": TASKS, "completions": [], "batch": 1}).encode(), "'batch'"),
            (json.dumps({"tasks": [{"id": "a"}], "completions": []}).encode(), "tasks[0]"),
            (
                json.dumps({"tasks": TASKS, "completions": [{"task_id": "x", "completion": "y"}]}),
                "completions[0]: task_id 'x' is not in 'tasks'",
            ),
            (json.dumps({"tasks": TASKS, "completions": [], "deadline_s": -1}), "deadline_s"),
        ]
        for body, fragment in cases:
            answer = httpx.post(url, content=body)
            assert answer.status_code == 400, body
            assert fragment in answer.json()["error"], answer.json()
        assert httpx.get(url).status_code == 405


def test_samples_unscored_by_the_deadline_come_back_as_timeout_rows(
    gated: threading.Event,
) -> None:
    tasks = [{"id": "t", "prompt": "p"}]
    completions = [{"task_id": "t", "completion": text} for text in ("go", "wait", "go")]
    with server("gated", executor="inline", limits=RewardServerLimits(deadline_s=60)) as bound:
        answer = httpx.post(
            f"{bound.url}/v1/score",
            json={"tasks": tasks, "completions": completions, "deadline_s": 2},
            timeout=60,
        )
        assert bound.service.admission.pending_samples == 0
    rows = answer.json()["scores"]
    assert [r["status"] for r in rows] == ["ok", "timeout", "ok"]
    assert [r["sample_index"] for r in rows] == [0, 1, 2]
    assert "deadline of 2s" in rows[1]["error"] and rows[1]["reward"] == 0.0
    assert rows[1]["verifier"] == rows[0]["verifier"]


def post_in_thread(url: str, body: dict[str, Any]) -> tuple[threading.Thread, list[httpx.Response]]:
    answers: list[httpx.Response] = []
    thread = threading.Thread(
        target=lambda: answers.append(httpx.post(url, json=body, timeout=120))
    )
    thread.start()
    return thread, answers


def test_a_full_queue_answers_429_with_retry_after_and_holds_no_more(
    gated: threading.Event,
) -> None:
    tasks = [{"id": "t", "prompt": "p"}]
    slow = {"tasks": tasks, "completions": [{"task_id": "t", "completion": "wait"}] * 2}
    one = {"tasks": tasks, "completions": [{"task_id": "t", "completion": "go"}]}
    limits = RewardServerLimits(max_pending_samples=2)
    with server("gated", executor="inline", limits=limits) as bound:
        url, admission = f"{bound.url}/v1/score", bound.service.admission
        thread, first = post_in_thread(url, slow)
        wait_until(lambda: admission.pending_samples == 2, "the first batch admitted")
        refused = httpx.post(url, json=one)
        assert admission.pending_samples == 2  # the refused batch took nothing
        gated.set()
        thread.join()
        retried = httpx.post(url, json=one)
        too_big = httpx.post(url, json={**one, "completions": one["completions"] * 3})
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1
    assert "--max-pending-samples (2)" in refused.json()["error"]
    assert first[0].status_code == 200 and retried.status_code == 200
    assert [r["status"] for r in first[0].json()["scores"]] == ["ok", "ok"]
    assert too_big.status_code == 413 and "split it" in too_big.json()["error"]


def test_request_bodies_are_bounded_one_by_one_and_together(gated: threading.Event) -> None:
    padding = "x" * 300_000
    tasks = [{"id": "t", "prompt": padding}]
    slow = {"tasks": tasks, "completions": [{"task_id": "t", "completion": "wait"}]}
    quick = {"tasks": tasks, "completions": [{"task_id": "t", "completion": "go"}]}
    limits = RewardServerLimits(max_body_bytes=400_000, max_pending_bytes=500_000)
    with server("gated", executor="inline", limits=limits) as bound:
        url, admission = f"{bound.url}/v1/score", bound.service.admission
        over = httpx.post(url, json={**quick, "tasks": [{"id": "t", "prompt": padding * 2}]})
        thread, first = post_in_thread(url, slow)
        wait_until(lambda: admission.pending_samples == 1, "the first body held")
        refused = httpx.post(url, json=quick)
        gated.set()
        thread.join()
        assert admission.held_bytes == 0
    assert over.status_code == 413 and "--max-body-mb" in over.json()["error"]
    assert refused.status_code == 429 and "--max-pending-mb" in refused.json()["error"]
    assert "retry-after" in refused.headers
    assert first[0].status_code == 200


def test_token_is_required_beyond_health_and_refusal_without_one_off_loopback() -> None:
    token = "s3cret-token-for-tests"
    body = {"tasks": TASKS[:1], "completions": COMPLETIONS[:1]}
    with server("exact_match", executor="inline", token=token) as bound:
        url = f"{bound.url}/v1/score"
        missing = httpx.post(url, json=body)
        wrong = httpx.post(url, json=body, headers={"Authorization": "Bearer not-the-token"})
        bearer = httpx.post(url, json=body, headers={"Authorization": f"Bearer {token}"})
        query = httpx.post(f"{url}?token={token}", json=body)
        metrics = httpx.get(f"{bound.url}/metrics")
        health = httpx.get(f"{bound.url}/healthz")
        for path in ("/a", "/b", "/c"):
            httpx.get(f"{bound.url}{path}")
        refusals = dict(bound.service.metrics.requests)
    assert missing.status_code == wrong.status_code == metrics.status_code == 401
    assert "no token was sent" in missing.json()["error"]
    assert missing.headers["www-authenticate"] == "Bearer"
    assert bearer.status_code == query.status_code == 200
    assert health.json()["status"] == "ok"
    assert refusals[("endpoint", "other"), ("code", "401")] == 3  # labels stay few
    assert refusals[("endpoint", "/v1/score"), ("code", "401")] == 2
    with pytest.raises(UserError, match="without a token"):
        bind(ServerOptions(spec="exact_match", host="0.0.0.0", port=0, executor="inline"))


def test_health_info_and_prometheus_metrics() -> None:
    body = {"tasks": TASKS, "completions": COMPLETIONS}
    with server("exact_match", executor="inline") as bound:
        httpx.post(f"{bound.url}/v1/score", json=body)
        httpx.post(f"{bound.url}/v1/score", content=b"{}")
        info = httpx.get(f"{bound.url}/v1/info").json()
        text = httpx.get(f"{bound.url}/metrics").text
    assert info["reward"] == "exact_match" and info["verifier"]["name"] == "exact_match"
    lines = set(text.splitlines())
    assert 'rlv_reward_requests_total{endpoint="/v1/score",code="200"} 1' in lines
    assert 'rlv_reward_requests_total{endpoint="/v1/score",code="400"} 1' in lines
    assert 'rlv_reward_samples_total{verifier="exact_match",status="ok"} 4' in lines
    assert 'rlv_reward_sample_seconds_bucket{verifier="exact_match",le="+Inf"} 4' in lines
    assert 'rlv_reward_sample_seconds_count{verifier="exact_match"} 4' in lines
    assert 'rlv_reward_request_seconds_count{endpoint="/v1/score"} 2' in lines
    assert (
        "rlv_reward_pending_samples 0" in lines
        and "# TYPE rlv_reward_sample_seconds histogram" in lines
    )


# -- a client that goes away mid-batch ----------------------------------------------------

SLEEPY_SOLUTION = "```python\nimport time\n\ndef answer():\n    time.sleep(120)\n    return 1\n```"
SLEEPY_TESTS = "from solution import answer\n\n\ndef test_answer():\n    assert answer() == 1\n"


def test_a_client_gone_mid_batch_cancels_its_work_and_leaks_nothing() -> None:
    tasks = [{"id": "slow", "prompt": "p", "reference": {"tests": SLEEPY_TESTS}}]
    # Two different solutions: copies of one sample would share a single check.
    completions = [
        {"task_id": "slow", "completion": SLEEPY_SOLUTION.replace("\n```", f"\n# {i}\n```")}
        for i in range(2)
    ]
    body = json.dumps({"tasks": tasks, "completions": completions}).encode()
    settings = {"timeout_s": 300, "run_timeout_s": 300}
    others = workers_of_this_process()  # left by earlier tests in this process, if any
    with server("pytest", settings, workers=2) as bound:
        address = urlsplit(bound.url)
        client = socket.create_connection((address.hostname, address.port))
        client.sendall(
            b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        started: set[int] = set()

        def sandboxes_running() -> bool:
            """Each of the two workers has its check running under bubblewrap."""
            started.clear()
            table, sandboxed = processes(), 0
            for worker in workers_of_this_process() - others:
                family = descendants(worker)
                started.update(family | {worker})
                sandboxed += any(b"bwrap" in table.get(pid, (0, b""))[1] for pid in family)
            return sandboxed == 2

        try:
            wait_until(sandboxes_running, "both checks to run in their sandboxes", 120)
        finally:
            client.close()  # the client goes away mid-batch
        wait_until(lambda: not started & set(processes()), "workers and sandboxes to be gone")
        admission = bound.service.admission
        wait_until(lambda: admission.open_requests == 0, "the request to be released")
        assert (admission.pending_samples, admission.held_bytes) == (0, 0)
        assert bound.service.metrics.disconnects == 1
        # The server goes on: a new check gets a fresh worker.
        quick = "```python\ndef answer():\n    return 1\n```"
        again = httpx.post(
            f"{bound.url}/v1/score",
            json={"tasks": tasks, "completions": [{"task_id": "slow", "completion": quick}]},
            timeout=120,
        )
    assert again.status_code == 200 and again.json()["scores"][0]["status"] == "ok"
    assert not workers_of_this_process() - others


def test_a_client_gone_before_its_body_arrives_releases_what_it_held() -> None:
    with server("exact_match", executor="inline") as bound:
        address = urlsplit(bound.url)
        client = socket.create_connection((address.hostname, address.port))
        client.sendall(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{")
        admission = bound.service.admission
        wait_until(lambda: admission.held_bytes > 0, "the request to be admitted")
        client.close()
        wait_until(lambda: bound.service.metrics.disconnects == 1, "the disconnect to be seen")
        wait_until(lambda: admission.open_requests == 0, "the request to be released")
        assert (admission.held_bytes, admission.pending_samples) == (0, 0)
