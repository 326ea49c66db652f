"""Reading probabilities and answers out of completions, including adversarial text."""

from __future__ import annotations

import re

import pytest

from rl_verifier_calibration.answer import AnswerError, extract_answer
from rl_verifier_calibration.forecast import ForecastError, extract_probability


@pytest.mark.parametrize(
    ("text", "value", "source"),
    [
        ("0.72", 0.72, "text"),
        ("I'd put it at .35 overall.", 0.35, "text"),
        ("72%", 0.72, "text"),
        ("About 72 % likely", 0.72, "text"),
        ("72 percent", 0.72, "text"),
        ("100%", 1.0, "text"),
        ("0%", 0.0, "text"),
        ("I estimate 0.4.", 0.4, "text"),
        ("<probability>0.72</probability>", 0.72, "tag"),
        ("<Probability> 72% </Probability>", 0.72, "tag"),
        ("<confidence>0.8</confidence>", 0.8, "tag"),
        ("<probability>1</probability>", 1.0, "tag"),
        ("<probability>1e-05</probability>", 1e-05, "tag"),
        ("<probability>7.5E-1</probability>", 0.75, "tag"),
        ("Probability: 0.72", 0.72, "label"),
        ("probability = 0.72", 0.72, "label"),
        ("**Probability:** 72%", 0.72, "label"),
        ("Final probability: 0.1", 0.1, "label"),
        ("Confidence: 0.9", 0.9, "label"),
        ("Confidence level: 80%", 0.8, "label"),
        ("Probability (yes): 0.66", 0.66, "label"),
        ("Probability: 1", 1.0, "label"),
        ("Probability: 0", 0.0, "label"),
        # The same value written twice is one forecast.
        ("72% (that is, 0.72)", 0.72, "text"),
        ("<probability>0.72</probability> <probability>72%</probability>", 0.72, "tag"),
        ("Probability: 0.25\nSummary... Probability: 25%", 0.25, "label"),
    ],
)
def test_reads_each_format(text: str, value: float, source: str) -> None:
    forecast = extract_probability(text)
    assert forecast.value == pytest.approx(value, abs=1e-12)
    assert forecast.source == source


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # Priority: a tag beats labels and free text; a label beats free text.
        ("Maybe 0.3 or 0.9... <probability>0.55</probability>", 0.55),
        ("Base rate 30%, trend 0.8.\nProbability: 0.6", 0.6),
        ("Confidence: 0.7 <probability>0.4</probability>", 0.4),
        # Bare integers (years, counts) are not forecasts.
        ("By 2024, 3 of 5 polls agree: 0.65", 0.65),
        ("Probability: 0.7 based on 3 polls from 2023", 0.7),
        # Versions, money, units and hyphenated names do not count.
        ("Release 1.2.3 of the spec makes it 40% likely", 0.4),
        ("Tickets cost $1.50; chance 40%", 0.4),
        ("A 2.5mg dose; I say 0.4", 0.4),
        ("COVID-19 cases: 0.2", 0.2),
        # Reasoning before </think> is not the answer.
        ("<think>0.3? no, 0.9?</think>Probability: 0.8", 0.8),
    ],
)
def test_priority_and_noise(text: str, value: float) -> None:
    assert extract_probability(text).value == pytest.approx(value, abs=1e-12)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "no probability"),
        ("It will probably happen.", "no probability"),
        ("In 2024 there were 3 elections", "no probability"),
        ("Probability: high", "no probability in the label"),
        ("<probability>likely</probability> 0.7", "no probability in the tag"),
        # Hedges: several different values in the chosen source.
        ("0.3 or 0.7", "several different"),
        ("I think 0.3, or maybe 0.7", "several different"),
        ("between 60% and 80%", "several different"),
        ("between 60 and 80%", "several different"),
        ("60-80%", "several different"),
        ("0.6 to 0.8", "several different"),
        ("0.3-0.5", "several different"),
        ("50% ... actually 90%", "several different"),
        ("Probability: 0.3 or 0.7", "several different"),
        ("Probability: 1 or 0", "several different"),
        ("Probability: 0.4\nProbability: 0.6", "several different"),
        ("<probability>0.3</probability><probability>0.7</probability>", "several different"),
        # A tag with two numbers must not be read as its first (or last) number.
        ("<probability>0.3 0.7</probability>", "several different"),
        ("<probability>0.3 or 0.7</probability> Probability: 0.5", "several different"),
        ("<probability>between 20 and 40%</probability>", "several different"),
        # Out of [0, 1].
        ("150%", "outside [0, 1]"),
        ("1.3", "outside [0, 1]"),
        ("-0.3", "outside [0, 1]"),
        ("Probability: 72", "outside [0, 1]"),
        ("<probability>1.5</probability>", "outside [0, 1]"),
        ("<probability>-5%</probability>", "outside [0, 1]"),
        ("Probability: 0.7\nProbability: 1.7", "outside [0, 1]"),
    ],
)
def test_refuses_hedges_and_nonsense(text: str, reason: str) -> None:
    with pytest.raises(ForecastError, match=re.escape(reason)):
        extract_probability(text)


def test_huge_numbers_do_not_overflow_into_a_forecast() -> None:
    with pytest.raises(ForecastError, match="outside"):
        extract_probability("9" * 500 + ".5")


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("<answer>yes</answer>", 1),
        ("<answer> No. </answer>", 0),
        ("<answer>TRUE</answer>", 1),
        ("<answer>0</answer>", 0),
        ("Answer: yes, fairly sure", 1),
        ("**Final answer:** no", 0),
        ("Answer: __No__", 0),
        ("<answer>yes</answer> ... <answer>Yes</answer>", 1),
        ("Answer: maybe\n<answer>no</answer>", 0),
    ],
)
def test_reads_answers(text: str, answer: int) -> None:
    assert extract_answer(text) == answer


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("I am 80% sure it happens", "no answer"),
        ("<answer>maybe</answer>", "not yes or no"),
        ("<answer>yes or no</answer>", "not yes or no"),
        ("<answer>yes</answer><answer>no</answer>", "several different"),
        ("Answer: perhaps", "not yes or no"),
        ("Answer: 0.7", "not yes or no"),
        ("<answer>0.7</answer>", "not yes or no"),
    ],
)
def test_refuses_bad_answers(text: str, reason: str) -> None:
    with pytest.raises(AnswerError, match=reason):
        extract_answer(text)
