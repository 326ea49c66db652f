"""BFCL mode: hand-made question and possible-answer rows, one test per checker rule."""

from __future__ import annotations

from typing import Any

import pytest

from rl_verifier.contracts import Completion, Status, Task, Verdict
from rl_verifier_tool_calls.bfcl.checker import category_of
from rl_verifier_tool_calls.bfcl.normalise import normalise_string
from rl_verifier_tool_calls.bfcl.parse import OutputParseError, parse_output
from rl_verifier_tool_calls.verifier import ToolCallsVerifier

AREA = {
    "name": "geometry.rectangle_area",
    "description": "Area of a rectangle.",
    "parameters": {
        "type": "dict",
        "properties": {
            "width": {"type": "float", "description": "Width in metres."},
            "height": {"type": "float"},
            "unit": {"type": "string", "enum": ["m2", "ft2"]},
        },
        "required": ["width", "height"],
    },
}
TICKETS = {
    "name": "book_tickets",
    "description": "Book train tickets.",
    "parameters": {
        "type": "dict",
        "properties": {
            "city": {"type": "string"},
            "count": {"type": "integer"},
            "seats": {"type": "array", "items": {"type": "string"}},
            "window": {"type": "boolean"},
            "options": {"type": "dict"},
        },
        "required": ["city", "count"],
    },
}
WEATHER = {
    "name": "get_weather",
    "parameters": {
        "type": "dict",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def rows(qid: str, functions: list[dict[str, Any]], truth: list[Any] | None) -> dict[str, Any]:
    question = {
        "id": qid,
        "question": [[{"role": "user", "content": "..."}]],
        "function": functions,
    }
    reference: dict[str, Any] = {"question": question}
    if truth is not None:
        reference["possible_answer"] = {"id": qid, "ground_truth": truth}
    return reference


AREA_TRUTH = [{"geometry.rectangle_area": {"width": [3.0], "height": [4.5], "unit": ["m2", ""]}}]
TICKET_TRUTH = {
    "book_tickets": {
        "city": ["New York", "NYC"],
        "count": [2],
        "seats": [["A1", "A2"], ""],
        "window": [True, ""],
        "options": [{"class": ["first"], "meal": ["veg", ""]}, ""],
    }
}
WEATHER_TRUTH = [{"get_weather": {"city": ["Paris"]}}, {"get_weather": {"city": ["Oslo"]}}]


def judge(reference: dict[str, Any], output: Any) -> Verdict:
    task = Task(id=reference["question"]["id"], prompt="...", reference=reference)
    verdict = ToolCallsVerifier({"mode": "bfcl"}).verify(
        task, Completion(task_id=task.id, completion=output)
    )
    assert isinstance(verdict, Verdict)
    return verdict


def simple(output: Any) -> Verdict:
    return judge(rows("simple_1", [AREA], AREA_TRUTH), output)


def tickets(output: Any) -> Verdict:
    return judge(rows("simple_2", [TICKETS], [TICKET_TRUTH]), output)


# Parsing -----------------------------------------------------------------------------------


def test_parses_python_call_syntax() -> None:
    assert parse_output('[f(a=1, b="x"), m.g(c=[1, 2.5], d={"k": None})]') == [
        ("f", {"a": 1, "b": "x"}),
        ("m.g", {"c": [1, 2.5], "d": {"k": None}}),
    ]
    assert parse_output("f(a=True)") == [("f", {"a": True})]
    assert parse_output("```python\n[f(a=1)]\n```") == [("f", {"a": 1})]


def test_parses_json_forms() -> None:
    assert parse_output('[{"f": {"a": 1}}]') == [("f", {"a": 1})]
    assert parse_output('{"name": "f", "arguments": "{\\"a\\": 1}"}') == [("f", {"a": 1})]
    assert parse_output('[{"name": "f", "parameters": {"a": 1}}]') == [("f", {"a": 1})]


@pytest.mark.parametrize("text", ["f(1)", "[f(a=x)]", "hello there", "[1, 2]", "f(**k)", ""])
def test_unparseable_outputs(text: str) -> None:
    with pytest.raises(OutputParseError):
        parse_output(text)


def test_categories_from_id_prefix() -> None:
    assert [
        category_of(i)
        for i in (
            "simple_3",
            "multiple_0",
            "parallel_9",
            "parallel_multiple_2",
            "irrelevance_7",
            "live_simple_1-1",
        )
    ] == ["simple", "multiple", "parallel", "parallel_multiple", "irrelevance", "simple"]
    with pytest.raises(ValueError, match="category"):
        category_of("mystery_1")


def test_string_normalisation() -> None:
    assert normalise_string("New York, NY") == normalise_string("new-york ny")
    assert normalise_string("San_Francisco") == "sanfrancisco"


# Rules -------------------------------------------------------------------------------------


def test_simple_exact_answer_passes() -> None:
    verdict = simple("[geometry.rectangle_area(width=3.0, height=4.5)]")
    assert (verdict.status, verdict.reward) == (Status.OK, 1.0)
    assert verdict.info["category"] == "simple"


def test_int_is_accepted_for_float() -> None:
    assert simple("[geometry.rectangle_area(width=3, height=4.5)]").reward == 1.0


def test_float_is_not_accepted_for_int() -> None:
    verdict = tickets('[book_tickets(city="NYC", count=2.0)]')
    assert verdict.reward == 0.0
    assert "expected type integer" in verdict.info["reason"]


def test_bool_is_not_an_int() -> None:
    assert tickets('[book_tickets(city="NYC", count=True)]').reward == 0.0


def test_strings_are_compared_normalised() -> None:
    assert tickets('[book_tickets(city="new york", count=2)]').reward == 1.0
    assert tickets('[book_tickets(city="Boston", count=2)]').reward == 0.0


def test_empty_string_means_optional() -> None:
    assert simple('[geometry.rectangle_area(width=3.0, height=4.5, unit="m2")]').reward == 1.0
    assert simple('[geometry.rectangle_area(width=3.0, height=4.5, unit="ft2")]').reward == 0.0


def test_optional_parameter_without_empty_string_is_required() -> None:
    truth = [{"geometry.rectangle_area": {"width": [3.0], "height": [4.5], "unit": ["m2"]}}]
    output = "[geometry.rectangle_area(width=3, height=4.5)]"
    verdict = judge(rows("simple_5", [AREA], truth), output)
    assert verdict.reward == 0.0
    assert "missing parameter 'unit'" in verdict.info["reason"]


def test_required_parameters_are_enforced() -> None:
    truth = [{"geometry.rectangle_area": {"width": [3.0], "height": ["", 4.5]}}]
    verdict = judge(rows("simple_6", [AREA], truth), "[geometry.rectangle_area(width=3.0)]")
    assert "missing required parameter 'height'" in verdict.info["reason"]


def test_unexpected_parameters_are_rejected() -> None:
    verdict = simple("[geometry.rectangle_area(width=3.0, height=4.5, depth=1)]")
    assert verdict.reward == 0.0
    assert "unexpected parameter 'depth'" in verdict.info["reason"]


def test_wrong_function_name() -> None:
    verdict = simple("[geometry.square_area(width=3.0, height=4.5)]")
    assert "wrong function" in verdict.info["reason"]


def test_lists_and_nested_dicts() -> None:
    ok = (
        '[book_tickets(city="NYC", count=2, seats=["a1", "A2"], window=True, '
        'options={"class": "First"})]'
    )
    assert tickets(ok).reward == 1.0
    assert tickets('[book_tickets(city="NYC", count=2, seats=["A2", "A1"])]').reward == 0.0
    assert tickets('[book_tickets(city="NYC", count=2, options={"class": "coach"})]').reward == 0.0
    assert tickets('[book_tickets(city="NYC", count=2, options={"bar": 1})]').reward == 0.0
    assert tickets('[book_tickets(city="NYC", count=2, window="yes")]').reward == 0.0


def test_simple_needs_exactly_one_call() -> None:
    once = "geometry.rectangle_area(width=3.0, height=4.5)"
    twice = f"[{once}, {once}]"
    verdict = simple(twice)
    assert "expected 1 call(s), got 2" in verdict.info["reason"]
    assert simple("[]").reward == 0.0


def test_multiple_picks_the_right_function() -> None:
    reference = rows("multiple_4", [WEATHER, AREA], AREA_TRUTH)
    assert judge(reference, "[geometry.rectangle_area(width=3.0, height=4.5)]").reward == 1.0
    assert judge(reference, '[get_weather(city="Paris")]').reward == 0.0


def test_parallel_in_any_order_and_exact_count() -> None:
    reference = rows("parallel_3", [WEATHER], WEATHER_TRUTH)
    assert judge(reference, '[get_weather(city="Oslo"), get_weather(city="Paris")]').reward == 1.0
    assert judge(reference, '[get_weather(city="Oslo"), get_weather(city="Oslo")]').reward == 0.0
    assert judge(reference, '[get_weather(city="Oslo")]').reward == 0.0


def test_parallel_multiple() -> None:
    reference = rows("parallel_multiple_1", [WEATHER, AREA], [*WEATHER_TRUTH[:1], *AREA_TRUTH])
    out = '[geometry.rectangle_area(width=3, height=4.5), get_weather(city="paris")]'
    assert judge(reference, out).reward == 1.0


def test_irrelevance_passes_only_without_calls() -> None:
    reference = rows("irrelevance_2", [WEATHER], None)
    assert judge(reference, "I cannot answer that with these tools.").reward == 1.0
    assert judge(reference, "[]").reward == 1.0
    assert judge(reference, '[get_weather(city="Rome")]').reward == 0.0


def test_calls_from_structured_messages_are_checked() -> None:
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    reference = rows("simple_7", [WEATHER], WEATHER_TRUTH[:1])
    assert judge(reference, [message]).reward == 1.0
    inline = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    assert judge(reference, inline).reward == 1.0


def test_unparseable_output_scores_zero_and_broken_rows_are_errors() -> None:
    verdict = simple("the area is 13.5")
    assert (verdict.status, verdict.reward) == (Status.OK, 0.0)
    assert "not a list of function calls" in verdict.info["reason"]
    assert judge(rows("simple_8", [AREA], None), "f()").status is Status.ERROR
    assert judge(rows("weird_1", [AREA], AREA_TRUTH), "f()").status is Status.ERROR
