"""Cold sandboxed ``python -m pytest`` versus the warm fork server (wall ms per job)."""

from __future__ import annotations

import statistics
import time

from rl_verifier_sandbox.api import Job
from rl_verifier_sandbox.bwrap.backend import BwrapSandbox

JOB = Job(
    argv=("python", "-m", "pytest", "-q", "-p", "no:cacheprovider"),
    files={"test_a.py": "def test_ok():\n    assert 1\n\ndef test_bad():\n    assert 0\n"},
)


def _ms(run: object, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        run(JOB)  # type: ignore[operator]
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    sb = BwrapSandbox()
    sb.run(JOB)
    cold = _ms(sb.run, 10)
    t0 = time.perf_counter()
    with sb.python_pool(size=1) as pool:
        start = (time.perf_counter() - t0) * 1000
        pool.run(JOB)
        warm = _ms(pool.run, 30)
    print(f"pool start: {start:.0f} ms")
    for name, xs in (("cold bwrap python -m pytest", cold), ("fork-server pytest job", warm)):
        print(f"{name:<30} median {statistics.median(xs):6.1f} ms  min {min(xs):6.1f} ms")


if __name__ == "__main__":
    main()
