"""`rlv reward-server` as a user runs it: help, refusals in one line, and SIGTERM that
answers the batch in flight before the server and its workers stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from click.testing import CliRunner
from rlv_cli_helpers import assert_user_error, rlv
from rlv_fake_plugins import MakePlugin

from rl_verifier.cli.app import cli

GATED_PLUGIN = '''
import time
from pathlib import Path
from rl_verifier import Verdict, Verifier, hookimpl

class Gated(Verifier):
    """Waits until the file the completion names exists, then rewards 1."""
    name = "gated"
    default_timeout_s = 120
    def verify(self, task, completion):
        while not Path(completion.text()).exists():
            time.sleep(0.02)
        return Verdict.ok(1.0)

@hookimpl
def register_verifiers(register):
    register(Gated)
'''


def test_help_names_every_endpoint_and_an_example() -> None:
    result = CliRunner().invoke(cli, ["reward-server", "--help"])
    assert result.exit_code == 0
    for fragment in ("/v1/score", "/get_reward", "--reward SPEC", "--token", "Examples:"):
        assert fragment in result.output


def test_refuses_a_public_address_without_a_token_in_one_line() -> None:
    result = rlv("reward-server", "--host", "0.0.0.0", "--port", "0", "--reward", "exact_match")
    assert_user_error(result, "refusing to serve on 0.0.0.0 without a token", "--token")
    assert result.returncode == 2
    short = rlv("reward-server", "--reward", "exact_match", "--token", "short")
    assert_user_error(short, "at least 8 printable ASCII characters")
    unknown = rlv("reward-server", "--reward", "no_such_verifier")
    assert_user_error(unknown, "no_such_verifier")


def process_table() -> dict[int, int]:
    """pid -> parent pid of every live (not zombie) process."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            table[int(entry.name)] = int(fields[1])
    return table


def descendants(pid: int) -> set[int]:
    table = process_table()
    family = {pid}
    while more := {p for p, parent in table.items() if parent in family} - family:
        family |= more
    return family - {pid}


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    """Poll ``condition`` (a loaded machine is slow; this asserts no speed)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting for: {what}")
        time.sleep(0.05)


def refuses_connections(url: str) -> bool:
    """No answer: the port is closed, or a connection that was still queued on it is closed
    unanswered (the listener stopped between accepting and reading it)."""
    try:
        httpx.get(f"{url}/healthz", timeout=5)
    except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError):
        return True
    return False


def test_sigterm_answers_the_batch_in_flight_then_stops_workers_and_exits_0(
    tmp_path: Path, make_plugin: MakePlugin
) -> None:
    site = make_plugin("gated", GATED_PLUGIN)
    gate, port_file = tmp_path / "open", tmp_path / "port"
    server = subprocess.Popen(
        [sys.executable, "-c", "from rl_verifier.cli.app import main; main()", "reward-server",
         "--reward", "gated", "--port", "0", "--port-file", str(port_file), "--workers", "2"],
        # Two copies of one sample would share one check through the verdict cache.
        env={**os.environ, "PYTHONPATH": str(site), "RLV_VERDICT_CACHE": "off"},
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        wait_until(port_file.exists, "the server to listen")
        url = f"http://127.0.0.1:{port_file.read_text()}"
        body = {
            "tasks": [{"id": "t", "prompt": "p"}],
            "completions": [{"task_id": "t", "completion": str(gate)}] * 2,
        }
        answers: list[httpx.Response] = []
        thread = threading.Thread(
            target=lambda: answers.append(httpx.post(f"{url}/v1/score", json=body, timeout=120))
        )
        thread.start()
        workers: set[int] = set()

        def both_checks_running() -> bool:
            workers.update(descendants(server.pid))
            return len(workers & set(process_table())) >= 2

        wait_until(both_checks_running, "both checks to start")
        server.send_signal(signal.SIGTERM)
        wait_until(lambda: refuses_connections(url), "the server to stop taking connections")
        assert thread.is_alive()  # the batch is still in flight, its checks waiting
        gate.touch()
        thread.join(120)
        returncode = server.wait(120)
    finally:
        if server.poll() is None:
            server.kill()
        _, stderr = server.communicate()
    assert answers and answers[0].status_code == 200, stderr
    rows = answers[0].json()["scores"]
    assert [(r["status"], r["reward"]) for r in rows] == [("ok", 1.0), ("ok", 1.0)]
    assert returncode == 0, stderr
    assert "Traceback" not in stderr
    assert not workers & set(process_table()), "worker processes outlived the server"
