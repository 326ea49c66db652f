"""Load on ``rlv reward-server`` against calling the Python API (``Scorer``) directly.

For ``exact_match``, ``calibration`` and ``pytest`` (sandboxed), C concurrent clients
(1, 8, 64) each score one sample per call, back to back, as OpenRLHF's rollout does:

- API:    ``await scorer.ascore(task, completion)`` in this process
- server: ``POST /v1/score`` (aiohttp, keep-alive) to ``rlv reward-server`` in its own
          process, with the same reward, executor and workers

and prints samples/s with p50/p99 latency side by side. The server's overhead per sample
is its p50 latency minus the API's for ``exact_match`` at one client (where the check
itself costs least, so HTTP, JSON and admission show); it must stay under 10% of
``pytest``'s cost per sample (the API's p50 at one client). The ratio is printed.

Run: .venv/bin/python benchmarks/reward_server_load.py [--clients 1 8 64] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from rl_verifier import Scorer

# These figures measure scoring itself: the verdict cache would answer repeats for free.
os.environ.setdefault("RLV_VERDICT_CACHE", "off")

ADD_TESTS = "from solution import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


@dataclass(frozen=True)
class Workload:
    """One verifier's sample, and how many calls a cell makes (at least, per client)."""

    spec: str
    task: dict[str, Any]
    completion: str
    calls: int
    calls_per_client: int


WORKLOADS = [
    Workload(
        "exact_match",
        {"id": "sum", "prompt": "2+2?", "reference": {"answer": "4"}},
        "The sum is <answer>4</answer>.",
        calls=800,
        calls_per_client=8,
    ),
    Workload(
        "calibration",
        {"id": "rain", "prompt": "Will it rain?", "reference": {"outcome": 1}},
        "<probability>0.7</probability>",
        calls=800,
        calls_per_client=8,
    ),
    Workload(
        "pytest",
        {"id": "add", "prompt": "Write add(a, b).", "reference": {"tests": ADD_TESTS}},
        "```python\ndef add(a, b):\n    return a + b\n```",
        calls=24,
        calls_per_client=2,
    ),
]


@dataclass(frozen=True)
class Cell:
    samples_per_s: float
    p50_ms: float
    p99_ms: float
    statuses: dict[str, int]


Cells = dict[tuple[str, int], Cell]  # ("api" | "server", clients) -> cell


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def load(call: Callable[[], Awaitable[str]], clients: int, calls: int) -> Cell:
    """``calls`` calls from ``clients`` concurrent clients; each returns a status."""
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    remaining = calls

    async def client() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            start = time.perf_counter()
            status = await call()
            latencies.append(time.perf_counter() - start)
            statuses[status] = statuses.get(status, 0) + 1

    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    wall = time.perf_counter() - start
    return Cell(
        calls / wall,
        1000 * percentile(latencies, 0.5),
        1000 * percentile(latencies, 0.99),
        statuses,
    )


class ServerProcess:
    """``rlv reward-server`` in its own process, on a free port."""

    def __init__(self, spec: str, workers: int | None) -> None:
        self.folder = tempfile.TemporaryDirectory()
        port_file = Path(self.folder.name) / "port"
        argv = [sys.executable, "-m", "rl_verifier", "reward-server", "--reward", spec]
        argv += ["--port", "0", "--port-file", str(port_file)]
        argv += ["--workers", str(workers)] if workers else []
        self.proc = subprocess.Popen(argv, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not port_file.exists() or not port_file.read_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"rlv reward-server {spec} did not start")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{port_file.read_text()}/v1/score"

    def close(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(120)
        self.folder.cleanup()


async def measure(workload: Workload, clients: list[int], workers: int | None) -> Cells:
    """The API's and the server's cell for each client count."""
    rows: Cells = {}
    body = {
        "tasks": [workload.task],
        "completions": [{"task_id": workload.task["id"], "completion": workload.completion}],
    }
    scorer = Scorer(workload.spec, workers=workers)
    server = ServerProcess(workload.spec, workers)
    connector = aiohttp.TCPConnector(limit=0)
    try:
        async with aiohttp.ClientSession(connector=connector) as session:

            async def via_api() -> str:
                score = await scorer.ascore(workload.task, workload.completion)
                return score.status.value

            async def via_server() -> str:
                async with session.post(server.url, json=body) as response:
                    response.raise_for_status()
                    answer = await response.json()
                return str(answer["scores"][0]["status"])

            for count in clients:
                calls = max(workload.calls, workload.calls_per_client * count)
                for name, call in (("api", via_api), ("server", via_server)):
                    await load(call, count, max(count, 4))  # warm: workers, sandboxes, sockets
                    rows[name, count] = await load(call, count, calls)
    finally:
        server.close()
        await asyncio.to_thread(scorer.close)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--workers", type=int, default=None, help="default: one per core")
    parser.add_argument("--quick", action="store_true", help="a quarter of the calls")
    parser.add_argument("--verifiers", nargs="+", default=[w.spec for w in WORKLOADS])
    args = parser.parse_args()
    results: dict[str, Cells] = {}
    for workload in WORKLOADS:
        if workload.spec not in args.verifiers:
            continue
        if args.quick:
            workload = Workload(
                workload.spec,
                workload.task,
                workload.completion,
                max(workload.calls // 4, 8),
                max(workload.calls_per_client // 2, 1),
            )
        print(f"measuring {workload.spec} ...", file=sys.stderr, flush=True)
        results[workload.spec] = asyncio.run(measure(workload, args.clients, args.workers))
    report(results, args.clients)


def report(results: dict[str, Cells], clients: list[int]) -> None:
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}, one sample per call")
    print(
        f"{'verifier':<12} {'clients':>7} | {'API samples/s':>13} {'p50 ms':>8} {'p99 ms':>8} "
        f"| {'server samples/s':>16} {'p50 ms':>8} {'p99 ms':>8} | {'server/API':>10}"
    )
    for spec, rows in results.items():
        for count in clients:
            api, server = rows["api", count], rows["server", count]
            print(
                f"{spec:<12} {count:>7} | {api.samples_per_s:>13.1f} {api.p50_ms:>8.2f} "
                f"{api.p99_ms:>8.2f} | {server.samples_per_s:>16.1f} {server.p50_ms:>8.2f} "
                f"{server.p99_ms:>8.2f} | {server.samples_per_s / api.samples_per_s:>10.2f}"
            )
    bad = {
        f"{spec} {side} x{count}": cell.statuses
        for spec, rows in results.items()
        for (side, count), cell in rows.items()
        if set(cell.statuses) != {"ok"}
    }
    if bad:
        print(f"not every sample was ok: {bad}")
    if "exact_match" in results and "pytest" in results and 1 in clients:
        cheap, code = results["exact_match"], results["pytest"]
        overhead = cheap["server", 1].p50_ms - cheap["api", 1].p50_ms
        cost = code["api", 1].p50_ms
        direct = code["server", 1].p50_ms - cost
        ratio = overhead / cost
        print(
            f"server overhead per sample (p50, 1 client, exact_match server - API): "
            f"{overhead:.2f} ms; pytest's cost per sample (p50, 1 client, API): {cost:.1f} ms"
        )
        print(
            f"overhead / pytest cost = {100 * ratio:.2f}% (must be < 10%): "
            f"{'PASS' if ratio < 0.10 else 'FAIL'}"
        )
        print(
            f"(pytest measured directly, server - API p50 at 1 client: {direct:.2f} ms, "
            f"{100 * direct / cost:.2f}% of its cost; sandbox variance dominates it)"
        )
    print(f"median of the server/API throughput ratios: {median_ratio(results, clients):.2f}")


def median_ratio(results: dict[str, Cells], clients: list[int]) -> float:
    ratios = [
        rows["server", c].samples_per_s / rows["api", c].samples_per_s
        for rows in results.values()
        for c in clients
    ]
    return statistics.median(ratios)


if __name__ == "__main__":
    main()
