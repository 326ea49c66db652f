"""The REPL pool against the fake: reuse, recycling, hangs, crashes, OOM."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
from lean_helpers import FAKE_REPL, fake_verifier, lean, run_all, task

from rl_verifier import Status
from rl_verifier_lean.procs import rss_kb


def test_fake_speaks_the_protocol() -> None:
    requests = (
        json.dumps({"cmd": "import Mathlib"})
        + "\n\n"
        + json.dumps({"cmd": "theorem a : True := trivial\n#print axioms a", "env": 0})
        + "\n\n"
        + json.dumps({"cmd": "theorem b : True := trivial", "env": 7})
        + "\n\n"
        + "{not json\n\n"
        + json.dumps({"cmd": "never reached"})
        + "\n\n"
    )
    done = subprocess.run(
        [sys.executable, FAKE_REPL], input=requests, capture_output=True, text=True, timeout=10
    )
    assert done.returncode != 0  # exits on malformed JSON
    answers = [json.loads(chunk) for chunk in done.stdout.split("\n\n") if chunk.strip()]
    assert answers[0] == {"env": 0}
    assert answers[1]["env"] == 1
    assert answers[1]["messages"][0]["data"] == "'a' does not depend on any axioms"
    assert set(answers[1]["messages"][0]) == {"severity", "pos", "endPos", "data"}
    assert answers[2] == {"message": "Unknown environment."}
    assert len(answers) == 3
    assert "\n  " in done.stdout  # pretty-printed, multi-line


def test_header_env_is_reused_across_proofs() -> None:
    verifier = fake_verifier(pool_size=1)
    verdicts = run_all(verifier, [(task(), lean("by simp"))] * 5)
    assert all(v.reward == 1.0 for v in verdicts)
    pool = verifier.pool()
    assert (pool.started, pool.retired) == (1, 0)


def test_repl_recycled_after_max_uses() -> None:
    verifier = fake_verifier(pool_size=1, max_uses=2)
    verdicts = run_all(verifier, [(task(), lean("by simp"))] * 5)
    assert all(v.reward == 1.0 for v in verdicts)
    assert verifier.pool().started == 3


def test_a_hanging_answer_scores_zero_and_repl_is_replaced() -> None:
    """The time went into the answer's own command: the model's failure (ok 0 naming the
    limit), never ``timeout``, which rlv train would drop."""
    verifier = fake_verifier(pool_size=1, proof_timeout_s=0.5)
    hang, after = run_all(
        verifier, [(task(), lean("by simp FAKE_HANG")), (task(), lean("by simp"))]
    )
    assert (hang.status, hang.reward) == (Status.OK, 0.0), hang
    assert (hang.info["limit"], hang.info["reason"]) == ("proof_timeout_s", "timeout")
    assert after.status is Status.OK and after.reward == 1.0
    assert verifier.pool().started == 2


@pytest.mark.parametrize(
    ("marker", "expect"),
    [("FAKE_CRASH", "exit code 1"), ("FAKE_EOF", "died"), ("FAKE_OOM", "out of memory")],
)
def test_crash_eof_oom_are_errors_and_repl_restarts(marker: str, expect: str) -> None:
    verifier = fake_verifier(pool_size=1, memory_mb=256)
    bad, after = run_all(verifier, [(task(), lean(f"by simp {marker}")), (task(), lean("by simp"))])
    assert bad.status is Status.ERROR and expect in (bad.error or ""), bad
    assert after.status is Status.OK and after.reward == 1.0
    assert verifier.pool().started == 2


def test_rss_threshold_recycles() -> None:
    verifier = fake_verifier(pool_size=1, max_rss_mb=64)
    run_all(verifier, [(task(), lean("by simp"))] * 2)
    pool = verifier.pool()
    # the fake's Python interpreter is under 64 MiB resident; nothing is recycled
    assert pool.retired == 0


def test_header_error_is_an_error_not_a_zero() -> None:
    bad = task(header="import Mathlib\ntheorem h : True := bogus")
    [v] = run_all(fake_verifier(), [(bad, lean("by simp"))])
    assert v.status is Status.ERROR and "header" in (v.error or "")


def test_rss_counts_the_whole_process_tree() -> None:
    """The REPL's pid may be a launcher (bwrap, lake); memory is summed over its tree."""
    verifier = fake_verifier(pool_size=1)

    async def go() -> tuple[float, float, str]:
        repl = await verifier.pool().acquire()
        try:
            await repl.send({"cmd": "import Mathlib"})
            return repl.rss_mb(), rss_kb(repl.proc.pid) / 1024, repl.isolation
        finally:
            verifier.pool().release(repl, healthy=True)
            await verifier.close()

    tree, own, isolation = asyncio.run(go())
    assert tree >= own > 0
    if isolation == "bwrap":
        assert tree - own > 5  # the interpreter below the launcher (bwrap) is counted


def test_rss_threshold_recycles_a_big_repl() -> None:
    verifier = fake_verifier(pool_size=1, max_rss_mb=64)
    verifier.pool().max_rss_mb = 1  # every REPL is "too big" now (the config's floor is 64)
    run_all(verifier, [(task(), lean("by simp"))] * 3)
    assert verifier.pool().started == 3 and verifier.pool().retired == 3


def test_stray_output_before_an_answer_is_skipped() -> None:
    [v] = run_all(fake_verifier(), [(task(), lean("by simp -- FAKE_NOISE"))])
    assert v.status is Status.OK and v.reward == 1.0, v
