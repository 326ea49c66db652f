"""Ray executor against the local process executor, and a projection to a cluster.

Scores the same batch of trivial checks (``exact_match``, ~20 us of real work each)
through the process executor and through Ray actors with 1 and 2 workers, on warm
workers (start-up and ``open()`` excluded), and prints samples/s. Because the work
is trivial, the per-sample time *is* the executor's overhead:

- worker overhead o   = wall time per sample with 1 worker, minus the direct verify()
                        cost (a round trip: serialise, schedule, run, return)
- driver ceiling D    = samples/s with 2 workers (the driver's dispatch rate on this
                        box, a lower bound: here driver and workers share 2 cores)

Projection for a cluster of C worker cores, one actor per core, work w per sample:

    throughput ~= min(C / (w + o), D)

printed for C = 64 and Lean-like (w = 2 s CPU per proof) and pytest-like (w = 60 ms)
workloads. It assumes the work is CPU-bound and parallel, that o is paid on the
worker's core (pessimistic: most of it is waiting, not CPU), and one driver.

Run: .venv/bin/python benchmarks/ray_scaling.py [--samples N]

On a machine with other interfaces, a local Ray instance listens on the routable
address; to keep it on loopback run the script in a loopback-only network namespace:
    unshare --net --fork sh -c 'ip link set lo up && exec "$@"' sh \
        .venv/bin/python benchmarks/ray_scaling.py
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from rl_verifier import Completion, Task
from rl_verifier.builtin import ExactMatch
from rl_verifier.engine import Sample, ScoringEngine
from rl_verifier.executors import Executor, ProcessExecutor
from rl_verifier.ray_executor import RayExecutor, init_ray, shutdown_ray
from rl_verifier.reward import Reward

# These figures measure scoring itself: the verdict cache would answer repeats for free.
os.environ.setdefault("RLV_VERDICT_CACHE", "off")

CLUSTER_CORES = 64
WORKLOADS = {"lean-like (2 s/proof)": 2.0, "pytest-like (60 ms/sample)": 0.060}


def make_batch(count: int) -> list[Sample]:
    task = Task(id="t", prompt="2+2?", reference={"answer": "4"})
    texts = ["<answer>4</answer>", "<answer>five</answer>"]
    return [Sample(task, Completion(task_id="t", completion=texts[i % 2]), i) for i in range(count)]


async def rate(executor: Executor, samples: list[Sample]) -> float:
    """Samples/s on warm workers: one warm-up pass, then a timed one."""
    reward = Reward.of(ExactMatch({}))
    jobs = [(reward, s) for s in samples]
    async with executor:
        await ScoringEngine(executor).score(jobs[: 4 * executor.capacity])
        start = time.perf_counter()
        scores = await ScoringEngine(executor).score(jobs)
        took = time.perf_counter() - start
    assert len(scores) == len(samples) and all(s.status == "ok" for s in scores)
    return len(samples) / took


def direct_cost(samples: list[Sample]) -> float:
    verifier = ExactMatch({})
    start = time.perf_counter()
    for sample in samples:
        verifier.verify(sample.task, sample.completion)
    return (time.perf_counter() - start) / len(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    args = parser.parse_args()
    samples = make_batch(args.samples)
    init_ray(num_cpus=2)
    rates = {
        "process, 1 worker": asyncio.run(rate(ProcessExecutor(1), samples)),
        "process, 2 workers": asyncio.run(rate(ProcessExecutor(2), samples)),
        "ray, 1 actor": asyncio.run(rate(RayExecutor(workers=1), samples)),
        "ray, 2 actors": asyncio.run(rate(RayExecutor(workers=2), samples)),
    }
    shutdown_ray()
    work = direct_cost(samples)
    print(f"{args.samples} samples of exact_match on {os.cpu_count()} cores (warm workers)")
    print(f"  {'direct verify()':<20} {1 / work:>10.0f} samples/s")
    for name, value in rates.items():
        print(f"  {name:<20} {value:>10.0f} samples/s   {1e3 / value:7.3f} ms/sample")
    overhead = 1 / rates["ray, 1 actor"] - work
    local = 1 / rates["process, 1 worker"] - work
    ceiling = rates["ray, 2 actors"]
    ms = f"{overhead * 1e3:.2f} ms (process executor: {local * 1e3:.2f} ms)"
    print(f"Ray per-sample overhead o = {ms}")
    print(f"driver ceiling D >= {ceiling:.0f} samples/s")
    print(f"projection for {CLUSTER_CORES} cores: min(C / (w + o), D)")
    for name, w in WORKLOADS.items():
        compute = CLUSTER_CORES / (w + overhead)
        bound = "driver" if ceiling < compute else "workers"
        print(f"  {name:<28} {min(compute, ceiling):8.1f} samples/s  ({bound}-bound)")


if __name__ == "__main__":
    main()
