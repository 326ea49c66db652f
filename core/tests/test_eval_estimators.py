"""pass@k against direct enumeration, intervals against scipy, majority votes, summaries."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from scipy import stats

from rl_verifier.evaluation.estimators import majority_correct, mean_interval, pass_at_k
from rl_verifier.evaluation.summary import summarise


def enumerated_pass_at_k(n: int, c: int, k: int) -> float:
    """The share of all k-subsets of n samples (c correct) holding a correct one."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in subset) for subset in subsets) / len(subsets)


def test_pass_at_k_matches_enumeration_on_random_cases_and_edges() -> None:
    rng = random.Random(32)
    cases = [(n, c, k) for n in (1, 2, 5) for c in (0, n) for k in (1, n)]  # c = 0, c = n, k = n
    cases += [
        (n, rng.randint(0, n), rng.randint(1, n)) for n in (rng.randint(1, 12) for _ in range(60))
    ]
    for n, c, k in cases:
        assert pass_at_k(n, c, k) == pytest.approx(enumerated_pass_at_k(n, c, k), abs=1e-12), (
            n,
            c,
            k,
        )
    assert pass_at_k(7, 0, 7) == 0.0 and pass_at_k(7, 7, 1) == 1.0 and pass_at_k(7, 1, 7) == 1.0


def test_pass_at_k_is_stable_for_large_n() -> None:
    n, c, k = 1000, 3, 100
    exact = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 1, 0), (3, 1, 4), (3, 4, 1), (3, -1, 1)])
def test_pass_at_k_refuses_impossible_counts(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="pass@k needs"):
        pass_at_k(n, c, k)


def test_mean_interval_matches_scipy_t_interval() -> None:
    rng = np.random.default_rng(32)
    for size in (2, 3, 5, 10, 40, 300):
        values = rng.uniform(0, 1, size).tolist()
        interval = mean_interval(values)
        assert interval is not None
        low, high = stats.t.interval(0.95, size - 1, loc=np.mean(values), scale=stats.sem(values))
        assert interval.mean == pytest.approx(np.mean(values), rel=1e-12)
        assert (interval.low, interval.high) == (
            pytest.approx(low, rel=1e-9),
            pytest.approx(high, rel=1e-9),
        )
        assert interval.count == size


def test_mean_interval_of_one_and_of_none() -> None:
    assert mean_interval([]) is None
    one = mean_interval([0.4])
    assert one is not None and (one.mean, one.low, one.high) == (0.4, None, None)
    same = mean_interval([1.0, 1.0, 1.0])
    assert same is not None and same.low == same.high == 1.0


def test_majority_vote_counts_and_ties() -> None:
    assert majority_correct([]) is None
    assert majority_correct([("1", False), ("2", True), ("2", True)]) is True
    assert majority_correct([("1", False), ("2", True)]) is False  # tie: first to the top
    # 2-2 tie: "1" reaches two votes first
    assert majority_correct([("2", True), ("1", False), ("1", False), ("2", True)]) is False


def row(
    task: str, index: int, reward: float, status: str = "ok", answer: str | None = None
) -> dict:
    info = {"answer": answer} if answer is not None else {}
    score = {"reward": reward, "status": status, "info": info, "elapsed_s": 0.0}
    return {"task_id": task, "sample_index": index, "tokens": 2, "score": score}


def test_summary_leaves_failures_out_of_the_estimates() -> None:
    rows = [
        row("a", 0, 1.0, answer="x"), row("a", 1, 0.0, answer="y"), row("a", 2, 0.0, "error"),
        row("a", 3, 1.0, answer="x"), row("b", 0, 0.0, "timeout"), row("b", 1, 0.0, "invalid"),
    ]  # fmt: skip
    summary = summarise(rows, ["a", "b", "c"], [1, 2, 3], 1.0)
    a, b, c = summary["per_task"]
    assert (a["judged"], a["correct"], a["status"]["error"]) == (3, 2, 1)
    assert a["pass_at_k"] == {str(k): pytest.approx(pass_at_k(3, 2, k)) for k in (1, 2, 3)}
    assert a["cons_at_k"] == {"1": 1.0, "2": 1.0, "3": 1.0}  # x; x-y tie: x first; x twice
    assert b["judged"] == 1 and b["pass_at_k"] == {"1": 0.0} and b["cons_at_k"] == {}
    assert c["samples"] == 0 and c["mean_reward"] is None
    overall = summary["overall"]
    assert overall["status"] == {"ok": 3, "invalid": 1, "timeout": 1, "error": 1}
    assert overall["pass_at_k"]["1"]["count"] == 2  # tasks a and b; c has no judged sample
    assert overall["pass_at_k"]["1"]["mean"] == pytest.approx((2 / 3 + 0.0) / 2)
    assert overall["pass_at_k"]["3"]["count"] == 1
