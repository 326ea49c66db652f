"""Reward specs: parsing, weighting, gating and status precedence."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rl_verifier import Status, Task, Verdict
from rl_verifier.base.errors import UserError
from rl_verifier.base.reward import Term, build_reward, parse_expression
from rl_verifier.discovery.plugins import get_plugins
from rl_verifier.testing import score_once

TASK = Task(id="t", prompt="p", reference={"answer": "Paris"})


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("a", [Term(1.0, ("a",))]),
        ("0.8*a + 0.2*b", [Term(0.8, ("a",)), Term(0.2, ("b",))]),
        ("format*exact_match", [Term(1.0, ("format", "exact_match"))]),
        ("1 - 0.5*b", [Term(1.0, ()), Term(-0.5, ("b",))]),
        ("-a + 2*3*b*c", [Term(-1.0, ("a",)), Term(6.0, ("b", "c"))]),
        ("1e-1*a", [Term(0.1, ("a",))]),
    ],
)
def test_parse(text: str, terms: list[Term]) -> None:
    assert parse_expression(text) == terms


@pytest.mark.parametrize("text", ["", "a +", "a b", "0.5**a", "a + * b", "a & b", "2 3"])
def test_parse_errors_are_user_errors(text: str) -> None:
    with pytest.raises(UserError, match=r"reward spec|empty"):
        parse_expression(text)


def composite(spec: str, config: dict | None = None):  # type: ignore[no-untyped-def]
    return build_reward(spec, get_plugins().registry, config)


def test_weighted_sum_and_components() -> None:
    reward = composite("0.8*exact_match + 0.2*format")
    verdict = reward.combine(
        {"exact_match": Verdict.ok(1.0), "format": Verdict.ok(0.0, components={"x": 0.5})}
    )
    assert verdict.reward == pytest.approx(0.8)
    assert verdict.components == {"exact_match": 1.0, "format": 0.0, "format.x": 0.5}
    assert verdict.info["format"]["status"] == "ok"


def test_gate_multiplies() -> None:
    reward = composite("format*exact_match")
    both = reward.combine({"format": Verdict.ok(1.0), "exact_match": Verdict.ok(1.0)})
    gated = reward.combine({"format": Verdict.ok(0.0), "exact_match": Verdict.ok(1.0)})
    assert (both.reward, gated.reward) == (1.0, 0.0)


def test_failure_of_any_component_is_never_a_score() -> None:
    reward = composite("0.5*exact_match + 0.5*format")
    verdict = reward.combine(
        {
            "exact_match": Verdict(status=Status.TIMEOUT, error="slow"),
            "format": Verdict.ok(1.0),
        }
    )
    assert verdict.status is Status.TIMEOUT and verdict.reward == 0.0
    assert "exact_match: slow" in (verdict.error or "")
    worse = reward.combine({"exact_match": Verdict.errored("down"), "format": Verdict.invalid("x")})
    assert worse.status is Status.ERROR


def test_invalid_component_keeps_penalised_sum() -> None:
    reward = composite("exact_match + format", {"exact_match": {"require_pattern": True}})
    [score] = score_once_spec(reward, "Paris")
    assert score.status is Status.INVALID
    assert score.reward == 0.0


def score_once_spec(reward, text):  # type: ignore[no-untyped-def]
    import asyncio

    from rl_verifier.base.contracts import Completion
    from rl_verifier.scoring.engine import Sample, make_executor, score_batch

    sample = Sample(TASK, Completion(task_id="t", completion=text), 0)
    return asyncio.run(score_batch([(reward, sample)], make_executor("inline"))).scores


def test_end_to_end_composite_score() -> None:
    reward = composite("0.8*exact_match + 0.2*format")
    [score] = score_once_spec(reward, "<answer>Paris</answer>")
    assert score.reward == pytest.approx(1.0)
    assert score.verifier.name == "0.8*exact_match + 0.2*format"
    assert "exact_match==" in score.verifier.version


def test_config_for_unused_verifier_is_rejected() -> None:
    with pytest.raises(UserError, match="config for 'pytest'"):
        composite("exact_match + format", {"pytest": {"x": 1}})


def test_unknown_verifier_lists_known_ones() -> None:
    with pytest.raises(UserError, match=r"unknown verifier 'nope'; known are: .*exact_match"):
        composite("nope")


def test_config_hash_depends_on_judging_settings_only() -> None:
    a = composite("exact_match").verifiers["exact_match"]
    b = composite("exact_match", {"timeout_s": 3}).verifiers["exact_match"]
    c = composite("exact_match", {"normalise": False}).verifiers["exact_match"]
    assert a.config_hash == b.config_hash != c.config_hash
    assert score_once(a, [(TASK, "paris")])[0].reward == 1.0


def test_verdict_factories_validate_as_the_constructor_does() -> None:
    info = {"category": "simple", "reason": "x"}
    judged = Verdict.judged(1, {"correct": 1}, info)
    assert judged == Verdict(reward=1.0, components={"correct": 1.0}, info=info)
    assert judged == Verdict.ok(1, {"correct": 1}, **info)
    assert type(judged.reward) is float and type(judged.components["correct"]) is float
    assert Verdict.invalid("no answer") == Verdict(status=Status.INVALID, error="no answer")
    assert Verdict.errored("down", at=1) == Verdict(
        status=Status.ERROR, error="down", info={"at": 1}
    )
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValidationError, match="finite"):
            Verdict.judged(bad, {}, {})
    with pytest.raises(ValidationError):
        Verdict.judged(1.0, {"correct": "yes"}, {})
