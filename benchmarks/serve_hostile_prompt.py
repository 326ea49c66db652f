"""How ``rlv serve`` answers an oversized prompt, and what it costs everyone else.

Per case, starts ``rlv serve`` with the built-in ``rlv/tiny-chat`` (a fresh data directory,
so each peak is its own), sends one oversized prompt to an OpenAI route and, 0.2 s later, a
small sample request (one token) beside it. Prints the oversized request's answer and wall
time, the server's resident memory before and after (``VmRSS``) and its peak growth
(``VmHWM``), and how long the small request took: it waits for the compute thread, so it
shows whether the oversized prompt held that thread. The last case is within
``--max-prompt-chars`` but far past the model's context, so it is tokenised.

    .venv/bin/python benchmarks/serve_hostile_prompt.py
    PYTHONPATH=OLD_CHECKOUT/server/src .venv/bin/python benchmarks/serve_hostile_prompt.py
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from rl_verifier_server.launch import LocalServer

KEY = "tml-benchmark-hostile-prompt"
MODEL = "rlv/tiny-chat"
WITHIN_LIMIT_CHARS = 900_000  # under the default --max-prompt-chars of 1,000,000


def status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} for process {pid}")


def words(chars: int) -> str:
    return ("word " * (chars // 5 + 1))[:chars]


def cases(chars: int) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (f"completions, {chars:,} x 'a'", "/v1/completions",
         {"model": MODEL, "prompt": "a" * chars, "max_tokens": 1}),
        (f"chat, {chars:,} chars of words", "/v1/chat/completions",
         {"model": MODEL, "messages": [{"role": "user", "content": words(chars)}],
          "max_tokens": 1}),
        (f"completions, {WITHIN_LIMIT_CHARS:,} of words", "/v1/completions",
         {"model": MODEL, "prompt": words(WITHIN_LIMIT_CHARS), "max_tokens": 1}),
    ]  # fmt: skip


def small_request(client: httpx.Client, took: list[float]) -> None:
    time.sleep(0.2)
    start = time.monotonic()
    body = {"model": MODEL, "prompt": "The", "max_tokens": 1}
    client.post("/v1/completions", json=body).raise_for_status()
    took.append(time.monotonic() - start)


def run_case(route: str, body: dict[str, Any]) -> str:
    """One case on a fresh server: the row of figures it printed."""
    with tempfile.TemporaryDirectory(prefix="rlv-hostile-prompt-") as folder:
        data = Path(folder)
        server = LocalServer(data, log_path=data / "server.log", extra_args=["--api-key", KEY])
        with (
            server,
            httpx.Client(
                base_url=server.url, headers={"Authorization": f"Bearer {KEY}"}, timeout=600
            ) as client,
        ):
            assert server.process is not None
            pid = server.process.pid
            small_request(client, [])  # warm-up
            rss, peak = status_mb(pid, "VmRSS"), status_mb(pid, "VmHWM")
            took: list[float] = []
            beside = threading.Thread(target=small_request, args=(client, took))
            start = time.monotonic()
            beside.start()
            answer = client.post(route, json=body)
            wall = time.monotonic() - start
            beside.join()
            grown = max(0.0, status_mb(pid, "VmHWM") - peak)
            after = status_mb(pid, "VmRSS")
            return (
                f"{answer.status_code:>6} {wall:>7.2f} {rss:>6.0f} -> {after:>5.0f} "
                f"{grown:>9.0f} {took[0]:>9.2f}  {answer.text[:80]}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=10_000_000, help="oversized prompt's size")
    args = parser.parse_args()
    print(f"rlv serve with {MODEL}, a fresh server per case")
    print(f"{'case':34} {'status':>6} {'wall s':>7} {'RSS MB':>15} {'peak +MB':>9} "
          f"{'beside s':>9}  answer")  # fmt: skip
    for name, route, body in cases(args.chars):
        print(f"{name:34} {run_case(route, body)}", flush=True)


if __name__ == "__main__":
    main()
