"""Per-sample rewards of every rule, their bounds, and that hedging at 0.5 never pays."""

from __future__ import annotations

import math
from typing import Any

import pytest

from rl_verifier import Completion, Status, Task, Verdict
from rl_verifier_calibration.rules import RULES
from rl_verifier_calibration.verifier import CalibrationVerifier

GRID = [i / 100 for i in range(101)]


def judge(completion: str, outcome: int, **config: Any) -> Verdict:
    task = Task(id="q", prompt="Will it happen?", reference={"outcome": outcome})
    verdict = CalibrationVerifier(config).verify(
        task, Completion(task_id="q", completion=completion)
    )
    assert isinstance(verdict, Verdict)
    return verdict


def reward(completion: str, outcome: int, **config: Any) -> float:
    verdict = judge(completion, outcome, **config)
    assert verdict.status is Status.OK, verdict.error
    return verdict.reward


@pytest.mark.parametrize(
    ("p", "outcome", "expected"),
    [
        (0.72, 1, 0.9216),
        (0.72, 0, 0.4816),
        (0.5, 1, 0.75),
        (1.0, 1, 1.0),
        (0.0, 1, 0.0),
        (0.0, 0, 1.0),
    ],
)
def test_brier(p: float, outcome: int, expected: float) -> None:
    assert reward(f"Probability: {p}", outcome) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("p", "outcome", "expected"),
    [
        (0.72, 1, 1 + math.log2(0.72)),
        (0.72, 0, 1 + math.log2(0.28)),
        (0.5, 0, 0.0),
        (0.25, 1, -1.0),
        (1.0, 1, 1.0),
        (0.001, 1, 1 + math.log2(0.01)),  # clipped at epsilon
        (0.0, 1, 1 + math.log2(0.01)),
        (1.0, 0, 1 + math.log2(0.01)),
    ],
)
def test_log(p: float, outcome: int, expected: float) -> None:
    assert reward(f"Probability: {p}", outcome, rule="log") == pytest.approx(expected, abs=1e-12)


def test_log_epsilon_is_configurable() -> None:
    got = reward("Probability: 0", 1, rule="log", epsilon=0.001)
    assert got == pytest.approx(1 + math.log2(0.001), abs=1e-12)


@pytest.mark.parametrize(
    ("p", "outcome", "expected"),
    [
        (0.72, 1, 0.72 / math.sqrt(0.72**2 + 0.28**2)),
        (0.72, 0, 0.28 / math.sqrt(0.72**2 + 0.28**2)),
        (0.5, 1, 0.5 / math.sqrt(0.5)),
        (0.6, 1, 0.6 / math.sqrt(0.52)),
        (1.0, 1, 1.0),
        (1.0, 0, 0.0),
    ],
)
def test_spherical(p: float, outcome: int, expected: float) -> None:
    got = reward(f"Probability: {p}", outcome, rule="spherical")
    assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("completion", "outcome", "expected"),
    [
        ("<answer>yes</answer><confidence>0.8</confidence>", 1, 0.96),
        ("<answer>yes</answer><confidence>0.8</confidence>", 0, -0.64),
        ("<answer>no</answer><confidence>0.8</confidence>", 0, 0.96),
        ("Answer: no\nConfidence: 90%", 1, -0.81),
        ("<answer>true</answer> Probability: 0.5", 1, 0.75),
        ("<answer>1</answer><confidence>1</confidence>", 1, 1.0),
        ("<answer>0</answer><confidence>1.0</confidence>", 1, -1.0),
    ],
)
def test_rlcr(completion: str, outcome: int, expected: float) -> None:
    assert reward(completion, outcome, rule="rlcr") == pytest.approx(expected, abs=1e-12)


def test_rlcr_info_and_components() -> None:
    verdict = judge("<answer>no</answer><confidence>0.7</confidence>", 1, rule="rlcr")
    assert verdict.info["answer"] == 0
    assert verdict.info["confidence"] == pytest.approx(0.7)
    assert verdict.info["correct"] == 0
    assert verdict.info["outcome"] == 1
    assert verdict.info["probability"] == pytest.approx(0.3)  # P(outcome = 1)
    assert verdict.components == pytest.approx({"correctness": 0.0, "calibration": -0.49})


@pytest.mark.parametrize(
    "completion",
    [
        "<confidence>0.8</confidence>",  # no answer
        "<answer>maybe</answer><confidence>0.8</confidence>",
        "<answer>yes</answer>",  # no confidence
        "<answer>yes</answer> Confidence: 0.6 or 0.9",
    ],
)
def test_rlcr_invalid(completion: str) -> None:
    assert judge(completion, 1, rule="rlcr").status is Status.INVALID


def test_components_and_info_for_probability_rules() -> None:
    verdict = judge("<probability>0.72</probability>", 1, rule="spherical")
    assert verdict.reward == verdict.components["spherical"]
    assert set(verdict.components) == {"brier", "log", "spherical"}
    assert verdict.info == {"probability": 0.72, "outcome": 1, "source": "tag"}


@pytest.mark.parametrize("rule", RULES)
def test_rewards_stay_in_bounds_and_reach_them(rule: str) -> None:
    verifier = CalibrationVerifier({"rule": rule})
    low, high = verifier.bounds()
    assert verifier.config.invalid_penalty == -0.1
    seen = []
    for p in GRID:
        for outcome in (0, 1):
            for answer in ("yes", "no"):
                text = f"<answer>{answer}</answer><probability>{p}</probability>"
                seen.append(reward(text, outcome, rule=rule))
    assert all(low - 1e-12 <= r <= high + 1e-12 for r in seen)
    assert max(seen) == pytest.approx(high)
    assert min(min(seen), -0.1) == pytest.approx(low)


def test_bounds_follow_the_configuration() -> None:
    assert CalibrationVerifier().bounds() == (-0.1, 1.0)
    assert CalibrationVerifier({"rule": "log"}).bounds() == (1 + math.log2(0.01), 1.0)
    assert CalibrationVerifier({"rule": "log", "epsilon": 0.25}).bounds() == (-1.0, 1.0)
    assert CalibrationVerifier({"rule": "rlcr"}).bounds() == (-1.0, 1.0)
    assert CalibrationVerifier({"invalid_penalty": 2}).bounds() == (0.0, 2.0)
    assert CalibrationVerifier.metadata().reward_range == (0.0, 1.0)


def expected(completion: str, p_true: float, rule: str) -> float:
    """Exact expected reward of a completion when the outcome is 1 with probability p_true."""
    if_yes, if_no = reward(completion, 1, rule=rule), reward(completion, 0, rule=rule)
    return p_true * if_yes + (1 - p_true) * if_no


@pytest.mark.parametrize("rule", ["brier", "log", "spherical"])
def test_hedging_never_beats_an_informed_forecast(rule: str) -> None:
    penalty = CalibrationVerifier({"rule": rule}).config.invalid_penalty
    for p in GRID:
        informed = expected(f"<probability>{p}</probability>", p, rule)
        hedged = expected("<probability>0.5</probability>", p, rule)
        assert informed > penalty  # refusing to forecast (invalid) does not pay either
        if p == 0.5:
            assert informed == pytest.approx(hedged, abs=1e-12)
        else:
            assert informed > hedged + 1e-9, (rule, p, informed, hedged)


def test_hedging_never_beats_an_informed_forecast_rlcr() -> None:
    for p in GRID:
        likely = "yes" if p >= 0.5 else "no"
        confidence = max(p, 1 - p)
        stated = f"<answer>{likely}</answer><confidence>{confidence}</confidence>"
        informed = expected(stated, p, "rlcr")
        # The hedger may pick either answer; the better of the two still loses.
        hedged = max(
            expected(f"<answer>{a}</answer><confidence>0.5</confidence>", p, "rlcr")
            for a in ("yes", "no")
        )
        assert informed == pytest.approx(confidence**2, abs=1e-12)  # E = c*(1-(1-c)^2) - (1-c)c^2
        assert informed > CalibrationVerifier({"rule": "rlcr"}).config.invalid_penalty
        if p == 0.5:
            assert informed == pytest.approx(hedged, abs=1e-12)
        else:
            assert informed > hedged + 1e-9, (p, informed, hedged)
