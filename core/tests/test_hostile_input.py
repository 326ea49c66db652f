"""Hostile input to the scoring paths: deep nesting never leaks a worker process; text that
is not Unicode is a 400 (reward server) or an error naming the file and line (`rlv verify`);
slow headers are cut off; no input gives a 500."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest
import zstandard
from rlv_cli_helpers import assert_user_error, io_args, rlv
from rlv_processes import answers_to_slow_headers, workers_of_this_process

from rl_verifier import Scorer, Status, Verifier
from rl_verifier.builtin.plugin import ExactMatch
from rl_verifier.cli_support import HEADER_TIMEOUT_S
from rl_verifier.discovery.plugins import get_plugins
from rl_verifier.reward_server import ServerOptions
from rl_verifier.reward_server.serve import serving_in_thread

SURROGATE = "\ud800"


def deep(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"a": value}
    return value


def settle(condition: Callable[[], bool], timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def test_a_sample_too_deep_to_send_is_an_error_row_and_leaks_no_worker() -> None:
    before = workers_of_this_process()
    with Scorer("exact_match", executor="process", workers=2) as scorer:
        rows = scorer.score_many(
            [({"id": f"t{i}", "prompt": "p", "reference": deep(300)}, "x") for i in range(20)]
        )
        ordinary = scorer.score({"id": "ok", "prompt": "p", "reference": {"answer": "x"}}, "x")
        live = workers_of_this_process() - before
    assert [row.status for row in rows] == [Status.ERROR] * 20
    assert "cannot send this sample to a worker" in (rows[0].error or "")
    assert ordinary.status is Status.OK and ordinary.reward == 1.0
    assert len(live) <= 2, f"{len(live)} workers for a pool of 2"
    assert settle(lambda: not workers_of_this_process() - before)


def test_the_reward_server_keeps_its_worker_count_under_deep_requests() -> None:
    before = workers_of_this_process()
    options = ServerOptions(spec="exact_match", port=0, workers=2)
    with serving_in_thread(options) as bound:
        url = f"{bound.url}/v1/score"
        tasks = [{"id": "t", "prompt": "p", "reference": {"answer": "x"}}]
        warm = httpx.post(
            url, json={"tasks": tasks, "completions": [{"task_id": "t", "completion": "x"}] * 4}
        )
        assert warm.status_code == 200 and warm.json()["scores"][0]["reward"] == 1.0
        for _ in range(20):
            task = {"id": "t", "prompt": "p", "reference": deep(300)}
            answer = httpx.post(
                url, json={"tasks": [task], "completions": [{"task_id": "t", "completion": "x"}]}
            )
            assert answer.status_code == 400, answer.text
            assert "tasks[0].reference" in answer.json()["error"]
            assert "deeper than" in answer.json()["error"]
        assert len(workers_of_this_process() - before) <= 2
    assert settle(lambda: not workers_of_this_process() - before)


def test_text_that_is_not_unicode_is_a_400_naming_the_field_and_is_counted() -> None:
    tasks = [{"id": "t", "prompt": "p", "reference": {"answer": "x"}}]
    completion = {"task_id": "t", "completion": "a" + SURROGATE}
    pair = {"query": ["px"], "prompts": ["p"]}
    cases = [
        ("/v1/score", {"tasks": tasks, "completions": [completion]}, "completions[0].completion"),
        ("/v1/score", {"tasks": [{**tasks[0], "id": SURROGATE}], "completions": []}, "tasks[0].id"),
        ("/get_reward", {"query": ["p" + SURROGATE], "prompts": ["p"]}, "query[0]"),
        ("/get_reward", {**pair, "labels": [{"answer": SURROGATE}]}, "labels[0].answer"),
        (
            "/get_reward",
            {**pair, "labels": [json.dumps({"answer": SURROGATE})]},
            "labels[0].answer",
        ),
    ]
    with serving_in_thread(ServerOptions(spec="exact_match", port=0, executor="inline")) as bound:
        for path, body, field in cases:
            answer = httpx.post(bound.url + path, content=json.dumps(body).encode())
            assert answer.status_code == 400, (path, answer.text)
            assert answer.json()["error"].startswith(f"{field}: not valid Unicode"), answer.json()
        counted = dict(bound.service.metrics.requests)
    assert counted[("endpoint", "/v1/score"), ("code", "400")] == 2
    assert counted[("endpoint", "/get_reward"), ("code", "400")] == 3


def test_hostile_bodies_on_every_route_never_get_a_500() -> None:
    deep_label = '{"a":' + "[" * 100_000 + "]" * 100_000 + "}"
    bodies = [
        json.dumps({"query": ["px"], "prompts": ["p"], "labels": [deep_label]}).encode(),
        json.dumps({"query": ["px"], "prompts": ["p"], "labels": [json.dumps(deep(300))]}).encode(),
        json.dumps({"tasks": [{"id": SURROGATE}], "completions": []}).encode(),
        b"[" * 100_000,
        json.dumps(deep(300)).encode(),
        zstandard.ZstdCompressor().compress(b'{"tasks": []}'),
    ]
    with serving_in_thread(ServerOptions(spec="exact_match", port=0, executor="inline")) as bound:
        for path in ("/v1/score", "/get_reward", "/healthz", "/v1/info", "/metrics", "/x"):
            for body in bodies:
                for method in ("GET", "POST"):
                    answer = httpx.request(method, bound.url + path, content=body, timeout=60)
                    assert answer.status_code < 500, (method, path, body[:40], answer.text)
        counted = dict(bound.service.metrics.requests)
    assert not [key for key in counted if key[1][1].startswith("5")]


def test_slow_headers_are_answered_408_and_closed() -> None:
    with serving_in_thread(ServerOptions(spec="exact_match", port=0, executor="inline")) as bound:
        address = urlsplit(bound.url)
        answers = answers_to_slow_headers(
            str(address.hostname), int(address.port or 0), b"POST /v1/sco", 10, HEADER_TIMEOUT_S * 4
        )
        assert all(answer.startswith(b"HTTP/1.1 408") for answer in answers), answers
        assert httpx.get(f"{bound.url}/healthz").status_code == 200


def test_a_token_with_a_plus_works_in_the_url() -> None:
    token = "abc+def/ghi=="
    body = {"tasks": [{"id": "t", "prompt": "p", "reference": {"answer": "x"}}], "completions": []}
    options = ServerOptions(spec="exact_match", port=0, executor="inline", token=token)
    with serving_in_thread(options) as bound:
        as_is = httpx.post(f"{bound.url}/v1/score?token={token}", json=body)
        escaped = httpx.post(f"{bound.url}/v1/score?token={quote(token, safe='')}", json=body)
        spaced = httpx.post(f"{bound.url}/v1/score?token=abc def/ghi==", json=body)
    assert as_is.status_code == escaped.status_code == 200
    assert spaced.status_code == 401


def test_rlv_verify_names_the_file_line_and_field_of_text_that_is_not_unicode(
    tmp_path: Path,
) -> None:
    tasks, completions = tmp_path / "tasks.jsonl", tmp_path / "completions.jsonl"
    tasks.write_text(json.dumps({"id": "t", "prompt": "p", "reference": {"answer": "x"}}) + "\n")
    rows = [{"task_id": "t", "completion": "x"}, {"task_id": "t", "completion": "x" + SURROGATE}]
    completions.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "scores.jsonl"
    result = rlv("verify", "--verifier", "exact_match", "--executor", "inline",
                 *io_args(tasks, completions, out))  # fmt: skip
    assert_user_error(result, f"{completions}:2: completion: not valid Unicode")
    assert not out.exists()


def test_registering_an_installed_verifier_in_a_test_leaves_it_installed(
    register_verifier: Callable[[type[Verifier]], type[Verifier]],
) -> None:
    registry = get_plugins().registry
    installed = registry.get("exact_match")
    assert installed.cls is ExactMatch
    register_verifier(ExactMatch)  # a no-op: it is the plugin's, not this test's
    assert registry.get("exact_match") == installed


def test_an_installed_verifier_survives_an_earlier_tests_fixture() -> None:
    """Runs after the test above (file order): the fixture's teardown removed nothing."""
    assert get_plugins().registry.get("exact_match").cls is ExactMatch


@pytest.mark.parametrize("levels", [126, 200])
def test_rlv_verify_refuses_a_row_nested_past_the_limit(tmp_path: Path, levels: int) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "t", "prompt": "p", "reference": deep(levels)}) + "\n")
    completions = tmp_path / "completions.jsonl"
    completions.write_text(json.dumps({"task_id": "t", "completion": "x"}) + "\n")
    result = rlv("verify", "--verifier", "exact_match", "--executor", "inline",
                 *io_args(tasks, completions, tmp_path / "s.jsonl"))  # fmt: skip
    if levels < 127:
        assert result.returncode == 0, result.stderr
    else:
        assert_user_error(result, f"{tasks}:1: reference", "deeper than 128 levels")
