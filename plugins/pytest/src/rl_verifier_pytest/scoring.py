"""Per-test results to a reward."""

from __future__ import annotations

from rl_verifier_pytest.config import RewardRule


def reward_of(results: list[bool], expected: int, rule: RewardRule) -> float:
    """``results`` has one entry per test that ran; a run reporting fewer tests than
    ``expected`` scores 0, whatever passed."""
    if len(results) < expected or not results:
        return 0.0
    passed = sum(results)
    if rule == "fraction":
        return passed / len(results)
    return 1.0 if passed == len(results) else 0.0
