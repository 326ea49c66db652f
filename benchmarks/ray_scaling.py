"""Ray executor against the local process executor, and a projection to a cluster.

Scores the same batch of trivial checks (``exact_match``, ~20 us of real work each)
through the process executor and through Ray actors with 1 and 2 workers, on warm
workers (start-up and ``open()`` excluded), and prints samples/s: Ray one sample per
call (``max_batch=1``, the path before batching) and Ray batched (the default: samples
sent in batches sized to the verifier's cost), in one run. Because the work is trivial,
the per-sample time *is* the executor's overhead:

- worker overhead o   = wall time per sample with 1 worker, minus the direct verify()
                        cost (a round trip: serialise, schedule, run, return)
- driver ceiling D    = samples/s with 2 workers (the driver's dispatch rate on this
                        box, a lower bound: here driver and workers share 2 cores)
- driver CPU ceiling  = samples per CPU second of the driver process (engine, executor
                        and Ray's client threads): the rate one driver with a core of its
                        own sustains, whatever else loads the box

Projection for a cluster of C worker cores, one actor per core, work w per sample:

    throughput ~= min(C / (w + o), D)

printed for C = 64 and 1,024, for Lean-like (w = 2 s CPU per proof), pytest-like
(w = 60 ms) and exact_match-like (w = 20 us) workloads, with D the driver CPU ceiling of
each path. It assumes the work is CPU-bound and parallel, that o is paid on the
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
from rl_verifier.base.reward import Reward
from rl_verifier.builtin.plugin import ExactMatch
from rl_verifier.execution.executors import Executor, ProcessExecutor
from rl_verifier.execution.ray_executor import RayExecutor, init_ray, shutdown_ray
from rl_verifier.scoring.engine import Sample, ScoringEngine

# These figures measure scoring itself: the verdict cache would answer repeats for free.
os.environ.setdefault("RLV_VERDICT_CACHE", "off")

CLUSTER_CORES = (64, 1024)
WORKLOADS = {
    "lean-like (2 s/proof)": 2.0,
    "pytest-like (60 ms/sample)": 0.060,
    "exact_match-like (20 us)": 20e-6,
}


def make_batch(count: int) -> list[Sample]:
    task = Task(id="t", prompt="2+2?", reference={"answer": "4"})
    texts = ["<answer>4</answer>", "<answer>five</answer>"]
    return [Sample(task, Completion(task_id="t", completion=texts[i % 2]), i) for i in range(count)]


async def rate(executor: Executor, samples: list[Sample]) -> tuple[float, float]:
    """Samples/s on warm workers, and samples per CPU second of this (the driver) process:
    one warm-up pass, then a timed one."""
    reward = Reward.of(ExactMatch({}))
    jobs = [(reward, s) for s in samples]
    async with executor:
        await ScoringEngine(executor).score(jobs[: min(4 * executor.capacity, len(jobs))])
        start, cpu = time.perf_counter(), time.process_time()
        scores = await ScoringEngine(executor).score(jobs)
        took, used = time.perf_counter() - start, time.process_time() - cpu
    assert len(scores) == len(samples) and all(s.status == "ok" for s in scores)
    assert [s.sample_index for s in scores] == [s.index for s in samples]
    return len(samples) / took, len(samples) / max(used, 1e-9)


def direct_cost(samples: list[Sample]) -> float:
    verifier = ExactMatch({})
    start = time.perf_counter()
    for sample in samples:
        verifier.verify(sample.task, sample.completion)
    return (time.perf_counter() - start) / len(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument(
        "--batched-samples", type=int, default=20000, help="samples for the batched rows"
    )
    args = parser.parse_args()
    samples = make_batch(args.samples)
    many = make_batch(args.batched_samples)
    init_ray(num_cpus=2)
    rates = {
        "process, 1 worker": asyncio.run(rate(ProcessExecutor(1), samples)),
        "process, 2 workers": asyncio.run(rate(ProcessExecutor(2), samples)),
        "ray, 1 actor": asyncio.run(rate(RayExecutor(workers=1, max_batch=1), samples)),
        "ray, 2 actors": asyncio.run(rate(RayExecutor(workers=2, max_batch=1), samples)),
        "ray, 1 actor, batched": asyncio.run(rate(RayExecutor(workers=1), many)),
        "ray, 2 actors, batched": asyncio.run(rate(RayExecutor(workers=2), many)),
    }
    shutdown_ray()
    work = direct_cost(samples)
    print(f"{args.samples} samples of exact_match ({args.batched_samples} for the batched rows) "
          f"on {os.cpu_count()} cores (warm workers), load {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"  {'direct verify()':<24} {1 / work:>10.0f} samples/s")
    for name, (value, per_cpu) in rates.items():
        print(f"  {name:<24} {value:>10.0f} samples/s   {1e3 / value:7.3f} ms/sample   "
              f"{per_cpu:>8.0f} per driver CPU-s")  # fmt: skip
    local = 1 / rates["process, 1 worker"][0] - work
    paths = {"one sample per call": "", "batched": ", batched"}
    for path, suffix in paths.items():
        overhead = 1 / rates["ray, 1 actor" + suffix][0] - work
        ceiling, cpu_ceiling = rates["ray, 2 actors" + suffix]
        print(f"Ray {path}: per-sample overhead o = {overhead * 1e3:.3f} ms (process "
              f"executor: {local * 1e3:.2f} ms); driver ceiling D >= {ceiling:.0f} samples/s "
              f"wall, {cpu_ceiling:.0f} samples per driver CPU-s")  # fmt: skip
    one, batched = rates["ray, 2 actors"], rates["ray, 2 actors, batched"]
    print(f"batched / one sample per call: {batched[0] / one[0]:.1f}x wall, "
          f"{batched[1] / one[1]:.1f}x driver CPU ceiling")  # fmt: skip
    for cores in CLUSTER_CORES:
        print(f"projection for {cores} cores: min(C / (w + o), D), D = driver CPU ceiling")
        for name, w in WORKLOADS.items():
            cells = []
            for path, suffix in paths.items():
                overhead = max(1 / rates["ray, 1 actor" + suffix][0] - work, 0.0)
                ceiling = rates["ray, 2 actors" + suffix][1]
                compute = cores / (w + overhead)
                bound = "driver" if ceiling < compute else "workers"
                cells.append(f"{path}: {min(compute, ceiling):10.1f}/s ({bound}-bound)")
            print(f"  {name:<28} " + "   ".join(cells))


if __name__ == "__main__":
    main()
