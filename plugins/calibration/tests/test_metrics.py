"""Batch metrics against scikit-learn and an independent numpy ECE."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, log_loss

from rl_verifier import Status, Task
from rl_verifier.testing import score_once
from rl_verifier_calibration.metrics import (
    as_pair,
    bin_index,
    calibration_metrics,
    expected_calibration_error,
)
from rl_verifier_calibration.verifier import CalibrationVerifier


def random_batch(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities with exact 0s, 1s and bin edges mixed in, and outcomes drawn from them."""
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    special = rng.random(n) < 0.2
    p[special] = rng.choice([0.0, 1.0, 0.1, 0.5, 0.9, 1e-17, 1 - 1e-17], special.sum())
    y = (rng.random(n) < p).astype(int)
    return p, y


def numpy_ece(p: np.ndarray, y: np.ndarray, bins: int) -> float:
    """ECE with bins (i/B, (i+1)/B], 0 in bin 0, via np.digitize."""
    inner_edges = (np.arange(bins + 1) / bins)[1:-1]
    index = np.digitize(p, inner_edges, right=True)
    total = 0.0
    for b in range(bins):
        members = index == b
        if members.any():
            total += members.mean() * abs(p[members].mean() - y[members].mean())
    return total


def as_pairs(p: np.ndarray, y: np.ndarray) -> list[tuple[float, int]]:
    return [(float(a), int(b)) for a, b in zip(p, y, strict=True)]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("n", [1, 7, 200])
def test_metrics_match_sklearn_and_numpy(seed: int, n: int) -> None:
    p, y = random_batch(seed, n)
    metrics = calibration_metrics(as_pairs(p, y), bins=10)
    assert metrics["n"] == n
    assert metrics["base_rate"] == pytest.approx(y.mean(), abs=1e-12)
    assert metrics["brier"] == pytest.approx(brier_score_loss(y, p), abs=1e-9)
    assert metrics["log_loss"] == pytest.approx(log_loss(y, p, labels=[0, 1]), abs=1e-12)
    assert metrics["ece"] == pytest.approx(numpy_ece(p, y, 10), abs=1e-9)
    if 0 < y.mean() < 1:
        skill = 1 - brier_score_loss(y, p) / (y.mean() * (1 - y.mean()))
        assert metrics["brier_skill"] == pytest.approx(skill, abs=1e-9)
    else:
        assert "brier_skill" not in metrics


@pytest.mark.parametrize("bins", [1, 3, 5, 7, 15, 20])
def test_ece_matches_numpy_for_other_bin_counts(bins: int) -> None:
    p, y = random_batch(99, 300)
    p[:40] = np.arange(40) % (bins + 1) / bins  # every edge, exactly
    assert expected_calibration_error(as_pairs(p, y), bins) == pytest.approx(
        numpy_ece(p, y, bins), abs=1e-9
    )


@pytest.mark.parametrize(
    ("p", "bins", "index"),
    [
        (0.0, 10, 0),
        (0.1, 10, 0),
        (0.1000001, 10, 1),
        (0.2, 10, 1),
        (0.3, 10, 2),
        (0.30000000000000004, 10, 3),
        (0.7, 10, 6),
        (0.95, 10, 9),
        (1.0, 10, 9),
        (0.4, 5, 1),
        (0.6, 5, 2),
        (1 / 3, 3, 0),
        (2 / 3, 3, 1),
        (0.5, 1, 0),
    ],
)
def test_edge_values_go_to_the_left_bin(p: float, bins: int, index: int) -> None:
    edges = [(i + 1) / bins for i in range(bins)]
    assert bin_index(p, bins, edges) == index


def test_ece_hand_computed_edges() -> None:
    # Bins of width 0.1: {0, 0.1} share bin 0, 0.2 is alone in bin 1, 1 in bin 9.
    pairs = [(0.1, 1), (0.2, 0), (0.0, 0), (1.0, 1)]
    # bin 0: mean p 0.05, hit rate 0.5 -> 2/4 * 0.45; bin 1: 1/4 * 0.2; bin 9: 0.
    assert expected_calibration_error(pairs, 10) == pytest.approx(0.225 + 0.05, abs=1e-12)
    assert expected_calibration_error([(0.1, 1)], 10) == pytest.approx(0.9, abs=1e-12)
    assert expected_calibration_error([(0.0, 0), (1.0, 1)], 10) == 0.0
    # One bin: |mean p - base rate|.
    assert expected_calibration_error(pairs, 1) == pytest.approx(abs(1.3 / 4 - 0.5), abs=1e-12)


def test_log_loss_clips_like_sklearn() -> None:
    pairs = [(0.0, 1), (1.0, 0), (1.0, 1), (0.0, 0)]
    y, p = np.array([1, 0, 1, 0]), np.array([0.0, 1.0, 1.0, 0.0])
    metrics = calibration_metrics(pairs, 10)
    assert metrics["log_loss"] == pytest.approx(log_loss(y, p), abs=1e-12)
    assert metrics["brier_skill"] == pytest.approx(1 - 0.5 / 0.25)


def test_empty_and_single_class_batches() -> None:
    assert calibration_metrics([], 10) == {"n": 0}
    metrics = calibration_metrics([(0.9, 1), (0.8, 1)], 10)
    assert metrics["base_rate"] == 1.0
    assert "brier_skill" not in metrics


@pytest.mark.parametrize(
    ("probability", "outcome", "ok"),
    [
        (0.3, 1, True),
        (1, 0, True),
        (None, 1, False),
        (True, 1, False),
        (float("nan"), 1, False),
        (1.2, 1, False),
        (0.3, 2, False),
        (0.3, "1", False),
    ],
)
def test_as_pair_checks_rows(probability: object, outcome: object, ok: bool) -> None:
    assert (as_pair(probability, outcome) is not None) is ok


def make_task(i: int, outcome: int) -> Task:
    return Task(id=f"t{i}", prompt="?", reference={"outcome": outcome})


def test_batch_metrics_from_score_rows() -> None:
    p, y = random_batch(5, 40)
    pairs = [
        (make_task(i, int(b)), f"<probability>{float(a)!r}</probability>")
        for i, (a, b) in enumerate(zip(p, y, strict=True))
    ]
    pairs += [
        (make_task(100, 1), "0.3 or 0.7"),  # invalid: counted in invalid_rate only
        (Task(id="broken", prompt="?", reference={}), "0.4"),  # error: ignored
    ]
    verifier = CalibrationVerifier({"ece_bins": 5})
    scores = score_once(verifier, pairs)
    assert [s.status for s in scores[-2:]] == [Status.INVALID, Status.ERROR]
    metrics = verifier.batch_metrics(scores)
    expected = calibration_metrics(as_pairs(p, y), bins=5)
    assert {k: v for k, v in metrics.items() if k != "invalid_rate"} == pytest.approx(expected)
    assert metrics["invalid_rate"] == pytest.approx(1 / 41)


def test_rlcr_batch_metrics_use_confidence_and_correctness() -> None:
    rows = [
        (make_task(0, 1), "<answer>yes</answer><confidence>0.9</confidence>"),  # right
        (make_task(1, 1), "<answer>no</answer><confidence>0.6</confidence>"),  # wrong
        (make_task(2, 0), "<answer>no</answer><confidence>0.7</confidence>"),  # right
    ]
    verifier = CalibrationVerifier({"rule": "rlcr"})
    metrics = verifier.batch_metrics(score_once(verifier, rows))
    expected = calibration_metrics([(0.9, 1), (0.6, 0), (0.7, 1)], bins=10)
    assert {k: v for k, v in metrics.items() if k != "invalid_rate"} == pytest.approx(expected)
    assert metrics["invalid_rate"] == 0.0
