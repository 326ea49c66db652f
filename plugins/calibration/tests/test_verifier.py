"""Reference outcomes, statuses, chat completions and plugin registration."""

from __future__ import annotations

from typing import Any

import pytest

from rl_verifier import Completion, Status, Task, UserError, Verdict
from rl_verifier.testing import discover
from rl_verifier_calibration.reference import OutcomeError, read_outcome
from rl_verifier_calibration.verifier import CalibrationConfig, CalibrationVerifier


@pytest.mark.parametrize(
    ("reference", "outcome"),
    [
        ({"outcome": 1}, 1),
        ({"outcome": 0}, 0),
        ({"outcome": 1.0}, 1),
        ({"outcome": True}, 1),
        ({"outcome": False}, 0),
        ({"outcome": "yes"}, 1),
        ({"outcome": " No "}, 0),
        ({"outcome": "true"}, 1),
        ({"resolved_to": 1.0}, 1),
        ({"resolved_to": 0.0, "resolved": True}, 0),
        ({"resolution": "Yes"}, 1),
        ({"outcome": 1, "resolved_to": 1.0}, 1),
    ],
)
def test_reads_outcomes(reference: dict[str, Any], outcome: int) -> None:
    assert read_outcome(reference) == outcome


@pytest.mark.parametrize(
    ("reference", "reason"),
    [
        ({}, "no 'outcome'"),
        ({"answer": "yes"}, "no 'outcome'"),
        ({"outcome": 0.5}, "not 0/1"),
        ({"outcome": 2}, "not 0/1"),
        ({"outcome": None}, "not 0/1"),
        ({"outcome": "maybe"}, "not 0/1"),
        ({"outcome": [1]}, "not 0/1"),
        ({"outcome": float("nan")}, "not 0/1"),
        ({"resolved_to": 0.37}, "not 0/1"),
        ({"resolved_to": 1.0, "resolved": False}, "not resolved"),
        ({"outcome": 1, "resolution": "no"}, "disagree"),
    ],
)
def test_bad_references(reference: dict[str, Any], reason: str) -> None:
    with pytest.raises(OutcomeError, match=reason):
        read_outcome(reference)


def verdict_for(reference: dict[str, Any], completion: Any, **config: Any) -> Verdict:
    task = Task(id="q", prompt="?", reference=reference)
    result = CalibrationVerifier(config).verify(
        task, Completion.model_validate({"task_id": "q", "completion": completion})
    )
    assert isinstance(result, Verdict)
    return result


@pytest.mark.parametrize("rule", ["brier", "rlcr"])
def test_a_task_without_outcome_is_an_error_not_invalid(rule: str) -> None:
    verdict = verdict_for({"answer": "yes"}, "<answer>yes</answer> 0.7", rule=rule)
    assert verdict.status is Status.ERROR
    assert "no 'outcome'" in (verdict.error or "")


def test_invalid_verdicts_carry_outcome_and_reason() -> None:
    verdict = verdict_for({"outcome": 1}, "0.3 or 0.7")
    assert verdict.status is Status.INVALID
    assert verdict.info == {"probability": None, "outcome": 1}
    assert "several different" in (verdict.error or "")


def test_chat_completion_uses_the_last_assistant_turn() -> None:
    chat = [
        {"role": "user", "content": "Will it rain? Give 0.1 or 0.9."},
        {"role": "assistant", "content": "Probability: 0.2"},
        {"role": "user", "content": "Sure?"},
        {"role": "assistant", "content": "Yes. <probability>0.35</probability>"},
    ]
    verdict = verdict_for({"outcome": 0}, chat)
    assert verdict.status is Status.OK
    assert verdict.info["probability"] == 0.35
    assert verdict.reward == pytest.approx(1 - 0.35**2)


def test_config_defaults_and_validation() -> None:
    config = CalibrationVerifier().config
    assert isinstance(config, CalibrationConfig)
    assert (config.rule, config.epsilon, config.ece_bins, config.invalid_penalty) == (
        "brier",
        0.01,
        10,
        -0.1,
    )
    for bad in ({"rule": "hinge"}, {"epsilon": 0}, {"epsilon": 0.7}, {"ece_bins": 0}):
        with pytest.raises(UserError, match=next(iter(bad))):
            CalibrationVerifier(bad)
    with pytest.raises(UserError, match="unknown config key 'bins'"):
        CalibrationVerifier({"bins": 5})


def test_rule_changes_the_config_hash() -> None:
    hashes = {CalibrationVerifier({"rule": r}).config_hash for r in ("brier", "log", "rlcr")}
    assert len(hashes) == 3


def test_registered_through_the_entry_point() -> None:
    plugins = discover()
    info = plugins.infos["calibration"]
    assert info.state == "loaded", info.errors
    assert info.distribution == "rl-verifier-calibration"
    assert plugins.registry.get("calibration").cls is CalibrationVerifier


def test_accept_narrows_where_a_forecast_may_be_written() -> None:
    from rl_verifier import Status, Task
    from rl_verifier.testing import score_once
    from rl_verifier_calibration.verifier import CalibrationVerifier

    task = Task(id="t", prompt="p", reference={"outcome": 1})
    texts = ["garbage .3< noise", "Probability: 0.8", "<probability>0.8</probability>"]
    expected = {
        "any": [Status.OK, Status.OK, Status.OK],
        "label": [Status.INVALID, Status.OK, Status.OK],
        "tag": [Status.INVALID, Status.INVALID, Status.OK],
    }
    for accept, statuses in expected.items():
        scores = score_once(CalibrationVerifier({"accept": accept}), [(task, t) for t in texts])
        assert [s.status for s in scores] == statuses, accept


def test_example_task_set_is_registered_and_scorable() -> None:
    from rl_verifier.testing import discover, score_once
    from rl_verifier_calibration.verifier import CalibrationVerifier

    tasks = discover().task_sets["calibration-example"].value()
    assert len(tasks) == 32 and {t.reference["outcome"] for t in tasks} == {0, 1}
    [score] = score_once(CalibrationVerifier(), [(tasks[0], "<probability>0.9</probability>")])
    assert score.status.value == "ok"
