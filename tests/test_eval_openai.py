"""`rlv eval --openai-base-url` against a small OpenAI-compatible server written here: its
answers are the official `openai` package's response types, and the official client reads
them. The server's reply depends on the request's seed, so the test knows every answer."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from openai.types.chat import ChatCompletion

from rl_verifier.evaluation.estimators import pass_at_k
from rl_verifier.evaluation.sampling import sample_seed

RLV = [sys.executable, "-c", "from rl_verifier.cli.app import main; main()"]
LETTERS = "stqe"


def answer_for(seed: int) -> str:
    return f"<answer>{LETTERS[seed % len(LETTERS)]}</answer>"


class ChatServer(BaseHTTPRequestHandler):
    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        ChatServer.requests.append(body)
        completion = ChatCompletion.model_validate({
            "id": f"chatcmpl-{len(ChatServer.requests)}", "object": "chat.completion",
            "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": answer_for(body["seed"])}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
        })  # fmt: skip
        data = completion.model_dump_json().encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), ChatServer)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def test_openai_compatible_endpoint(server: str, tmp_path: Path) -> None:
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"t{i}",
                    "prompt": f"Letter {i}?",
                    "reference": {"answer": "s"},
                    "verifier": "exact_match",
                }
            )
            + "\n"
            for i in range(3)
        )
        + json.dumps({"id": "broken", "prompt": "No reference.", "verifier": "exact_match"})
        + "\n"
    )
    args = ["eval", "--openai-base-url", server, "--model", "my-model", "--tasks", str(tasks),
            "-n", "5", "-k", "1,5", "--max-tokens", "7", "--temperature", "0.5",
            "--out", str(tmp_path / "ev")]  # fmt: skip
    result = subprocess.run([*RLV, *args], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    sent = ChatServer.requests
    assert len(sent) == 20
    assert {(r["model"], r["max_tokens"], r["temperature"], r["n"]) for r in sent} == {
        ("my-model", 7, 0.5, 1)
    }
    assert (
        sent[0]["messages"][0]["role"] == "user" and "Letter" in sent[0]["messages"][0]["content"]
    )
    rows = [
        json.loads(line) for line in (tmp_path / "ev" / "samples.jsonl").read_text().splitlines()
    ]
    summary = json.loads((tmp_path / "ev" / "summary.json").read_text())
    assert summary["settings"]["backend"] == "openai"
    # the verifier's errors are counted, never scored as wrong answers
    broken = summary["per_task"][-1]
    assert broken["task_id"] == "broken" and broken["status"]["error"] == 5
    assert broken["judged"] == 0 and broken["pass_at_k"] == {} and broken["mean_reward"] is None
    assert summary["overall"]["status"]["error"] == 5
    assert summary["overall"]["pass_at_k"]["1"]["count"] == 3
    for task in summary["per_task"][:-1]:
        seeds = [sample_seed(0, task["task_id"], i, 1) for i in range(5)]
        expected = [answer_for(seed) for seed in seeds]
        mine = sorted((r for r in rows if r["task_id"] == task["task_id"]),
                      key=lambda r: r["sample_index"])  # fmt: skip
        assert [r["completion"][0]["content"] for r in mine] == expected
        assert task["tokens"] == 15
        correct = sum(e == "<answer>s</answer>" for e in expected)
        assert task["pass_at_k"]["1"] == pytest.approx(pass_at_k(5, correct, 1))
        assert task["pass_at_k"]["5"] == pytest.approx(pass_at_k(5, correct, 5))
