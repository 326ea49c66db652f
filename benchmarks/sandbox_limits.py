"""Per-job cost of the bwrap backend's cgroup and seccomp, side by side with rlimits alone.

Runs the same jobs on four sandboxes (rlimits only, + seccomp, + cgroup, both: the default),
round-robin so that load from elsewhere on the machine hits them alike, and prints the median
and minimum wall time per job, the difference from the rlimit-only baseline, and the cost of
the pieces alone (making and removing a job cgroup, the filter's one-off build and its memfd).

    .venv/bin/python benchmarks/sandbox_limits.py [--rounds 25]
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time
from collections.abc import Callable

from rl_verifier_sandbox.api import Job, Policy, Sandbox
from rl_verifier_sandbox.bwrap.backend import BwrapSandbox
from rl_verifier_sandbox.linux import cgroups, seccomp

JOBS = {
    "/bin/true": Job(argv=("/bin/true",), policy=Policy(python=False)),
    "python -c pass": Job(argv=("python", "-c", "pass")),
}


def _ms(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def _row(name: str, xs: list[float], base: list[float] | None) -> str:
    med = statistics.median(xs)
    delta = "" if base is None else f"  {med - statistics.median(base):+6.1f} ms vs rlimits only"
    return f"  {name:<24} median {med:6.1f} ms  min {min(xs):6.1f} ms{delta}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=25)
    args = parser.parse_args()
    host = cgroups.host_cgroups()
    print(f"cgroups: {host.mechanism if host else 'none (' + cgroups.unavailable_reason() + ')'}")
    build_ms = _ms(seccomp.bpf_program)
    print(f"seccomp filter: {len(seccomp.bpf_program()) // 8} BPF instructions, built once")
    variants: dict[str, Sandbox] = {
        "rlimits only": BwrapSandbox(cgroups=False, seccomp=False),
        "+ seccomp": BwrapSandbox(cgroups=False, seccomp=True),
        "+ cgroup": BwrapSandbox(cgroups=True, seccomp=False),
        "cgroup + seccomp": BwrapSandbox(),  # the default
    }
    for label, job in JOBS.items():
        times: dict[str, list[float]] = {name: [] for name in variants}
        for sb in variants.values():
            sb.run(job)  # warm caches (site dir, filter, cgroup detection)
        for _ in range(args.rounds):
            for name, sb in variants.items():
                times[name].append(_ms(functools.partial(sb.run, job)))
        print(f"cold job `{label}` ({args.rounds} rounds):")
        base = times["rlimits only"]
        for name, xs in times.items():
            print(_row(name, xs, None if name == "rlimits only" else base))
    warm: dict[str, list[float]] = {}
    job = JOBS["python -c pass"]
    for name in ("rlimits only", "cgroup + seccomp"):
        sb = variants[name]
        assert isinstance(sb, BwrapSandbox)
        with sb.python_pool(size=1) as pool:
            pool.run(job)
            warm[name] = [_ms(functools.partial(pool.run, job)) for _ in range(args.rounds * 2)]
    print("fork-server job `python -c pass` (the server's cgroup limits are set per job):")
    for name, xs in warm.items():
        print(_row(name, xs, None if name == "rlimits only" else warm["rlimits only"]))
    print("pieces alone:")
    print(f"  seccomp filter build (once per process)  {build_ms:6.1f} ms")
    memfd = [_ms(lambda: os.close(seccomp.memfd())) for _ in range(200)]
    print(f"  seccomp memfd per job                    {statistics.median(memfd):6.3f} ms")
    if host is not None:
        make = functools.partial(host.create, memory_bytes=1 << 30, pids=67)
        life = [_ms(lambda: make().close()) for _ in range(50)]
        print(f"  cgroup create + limits + remove         {statistics.median(life):6.2f} ms")


if __name__ == "__main__":
    main()
