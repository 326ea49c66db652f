"""BFCL mode: hand-made question and possible-answer rows, one test per rule of BFCL's
checker that a user relies on (test_bfcl_parity.py checks all of them against bfcl-eval)."""

from __future__ import annotations

import gc
import json
import sys
from typing import Any

import pytest

from rl_verifier import Completion, Status, Task, Verdict
from rl_verifier_tool_calls.bfcl import sourcecalls
from rl_verifier_tool_calls.bfcl.categories import category_of
from rl_verifier_tool_calls.bfcl.normalise import standardise
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
            "prices": {"type": "array", "items": {"type": "float"}},
            "window": {"type": "boolean"},
            "options": {"type": "dict"},
            "note": {"type": "string"},
            "span": {"type": "tuple", "items": {"type": "integer"}},
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
        "prices": [[10.0, 12.5], ""],
        "window": [True, ""],
        "options": [{"class": ["first"], "meal": ["veg", ""], "stops": [["Oslo", "Bergen"]]}, ""],
        "note": ["", "quiet"],
        "span": [[1, 2], ""],
    }
}
WEATHER_TRUTH = [{"get_weather": {"city": ["Paris"]}}, {"get_weather": {"city": ["Oslo"]}}]


def judge(reference: dict[str, Any], output: Any, **bfcl: Any) -> Verdict:
    task = Task(id=reference["question"]["id"], prompt="...", reference=reference)
    verdict = ToolCallsVerifier({"mode": "bfcl", "bfcl": bfcl}).verify(
        task, Completion(task_id=task.id, completion=output)
    )
    assert isinstance(verdict, Verdict)
    return verdict


def simple(output: Any, **bfcl: Any) -> Verdict:
    return judge(rows("simple_python_1", [AREA], AREA_TRUTH), output, **bfcl)


def tickets(output: Any) -> Verdict:
    return judge(rows("simple_python_2", [TICKETS], [TICKET_TRUTH]), output)


def error_type(verdict: Verdict) -> str | None:
    return verdict.info.get("error_type")


def tool_message(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    tool_calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for i, (n, a) in enumerate(calls)
    ]
    return [{"role": "assistant", "content": "", "tool_calls": tool_calls}]


# Categories and strings --------------------------------------------------------------------


def test_categories_are_read_from_the_id_as_bfcl_reads_them() -> None:
    ids = ("simple_python_3", "multiple_0", "parallel_multiple_2", "live_simple_1-1-0")
    assert [category_of(i).name for i in ids] == [
        "simple_python",
        "multiple",
        "parallel_multiple",
        "live_simple",
    ]
    java, irrelevant = category_of("simple_java_4"), category_of("live_irrelevance_7-0-0")
    assert (java.language, java.checker) == ("java", "simple")
    assert category_of("simple_javascript_1").language == "javascript"
    assert (irrelevant.relevance, category_of("live_relevance_0-0-0").relevance) == (
        "irrelevance",
        "relevance",
    )
    assert category_of("live_parallel_multiple_0-0-0").checker == "parallel"


def test_unknown_category_is_a_task_error() -> None:
    verdict = judge(rows("mystery_1", [AREA], AREA_TRUTH), "[f()]")
    assert verdict.status is Status.ERROR and "unknown BFCL category 'mystery'" in str(
        verdict.error
    )
    named = rows("mystery_1", [AREA], AREA_TRUTH) | {"category": "simple_python"}
    assert judge(named, "[geometry.rectangle_area(width=3.0, height=4.5)]").reward == 1.0


def test_string_standardisation_is_bfcls() -> None:
    assert standardise("New York, NY") == standardise("new-york ny") == "newyorkny"
    assert standardise("a_b*c^d/e.f") == "abcdef"
    assert standardise("it's") == 'it"s'  # ' becomes ", it is not removed
    assert standardise("a\tb\nc") == "a\tb\nc"  # only the space character is removed


# Values --------------------------------------------------------------------------------------


def test_exact_answer_passes_and_strings_compare_standardised() -> None:
    assert simple("[geometry.rectangle_area(width=3.0, height=4.5)]").reward == 1.0
    assert tickets('[book_tickets(city="new-york", count=2)]').reward == 1.0
    verdict = tickets('[book_tickets(city="Boston", count=2)]')
    assert (verdict.reward, error_type(verdict)) == (0.0, "value_error:string")


@pytest.mark.parametrize("city", ["New York'", 'New "York', "New\tYork", "New York\n"])
def test_quotes_tabs_and_newlines_count_in_strings(city: str) -> None:
    verdict = tickets(f"[book_tickets(city={city!r}, count=2)]")
    assert (verdict.reward, error_type(verdict)) == (0.0, "value_error:string")


def test_int_is_accepted_for_float_but_not_the_reverse() -> None:
    assert simple("[geometry.rectangle_area(width=3, height=4.5)]").reward == 1.0
    verdict = tickets('[book_tickets(city="NYC", count=2.0)]')
    assert (verdict.reward, error_type(verdict)) == (0.0, "type_error:simple")
    assert tickets('[book_tickets(city="NYC", count=True)]').reward == 0.0


def test_ints_inside_a_float_array_fail_the_nested_type_check() -> None:
    # BFCL converts a top-level int to float, not the items of a list.
    truth = {"book_tickets": {"city": ["NYC"], "count": [2], "prices": [[10.0, 12.5]]}}
    reference = rows("simple_python_3", [TICKETS], [truth])
    verdict = judge(reference, '[book_tickets(city="NYC", count=2, prices=[10, 12.5])]')
    assert (verdict.reward, error_type(verdict)) == (0.0, "type_error:nested")
    assert judge(reference, '[book_tickets(city="NYC", count=2, prices=[10.0, 12.5])]').reward == 1


def test_tuples_only_where_the_declared_type_is_tuple() -> None:
    assert tickets('[book_tickets(city="NYC", count=2, span=(1, 2))]').reward == 1.0
    verdict = tickets('[book_tickets(city="NYC", count=2, seats=("A1", "A2"))]')
    assert (verdict.reward, error_type(verdict)) == (0.0, "type_error:simple")


def test_lists_compare_in_order_with_top_level_strings_standardised() -> None:
    assert tickets('[book_tickets(city="NYC", count=2, seats=["a1", "A 2"])]').reward == 1.0
    verdict = tickets('[book_tickets(city="NYC", count=2, seats=["A2", "A1"])]')
    assert (verdict.reward, error_type(verdict)) == (0.0, "value_error:list/tuple")


def test_dicts_compare_per_key_and_nested_lists_exactly() -> None:
    base = '[book_tickets(city="NYC", count=2, options={})]'
    ok = base.replace("{}", '{"class": "First", "stops": ["Oslo", "Bergen"]}')
    assert tickets(ok).reward == 1.0
    nested = tickets(ok.replace('"Oslo"', '"oslo"'))  # strings inside the list are not standardised
    assert (nested.reward, error_type(nested)) == (0.0, "value_error:dict_value")
    unknown = tickets(base.replace("{}", '{"class": "first", "stops": ["Oslo", "Bergen"], "x": 1}'))
    assert error_type(unknown) == "value_error:dict_key"
    missing = tickets(base.replace("{}", '{"stops": ["Oslo", "Bergen"]}'))
    assert error_type(missing) == "value_error:dict_key"


def test_a_value_of_the_answers_type_is_a_variable_compared_exactly() -> None:
    # is_unisex is declared a string, but the answer is [True]: BFCL takes True as given.
    fn = {
        "name": "find_clothes",
        "parameters": {
            "type": "dict",
            "properties": {"is_unisex": {"type": "string"}, "size": {"type": "integer"}},
            "required": ["is_unisex"],
        },
    }
    reference = rows("simple_python_4", [fn], [{"find_clothes": {"is_unisex": [True]}}])
    assert judge(reference, "[find_clothes(is_unisex=True)]").reward == 1.0
    assert judge(reference, "[find_clothes(is_unisex=False)]").info["error_type"] == (
        "value_error:others"
    )
    optional_none = [{"find_clothes": {"is_unisex": [True], "size": ["", None]}}]
    reference = rows("simple_python_5", [fn], optional_none)
    assert judge(reference, "[find_clothes(is_unisex=True, size=None)]").reward == 1.0


def test_an_optional_parameter_may_be_left_out_or_given_an_empty_string() -> None:
    assert tickets('[book_tickets(city="NYC", count=2)]').reward == 1.0
    assert tickets('[book_tickets(city="NYC", count=2, note="")]').reward == 1.0
    assert tickets('[book_tickets(city="NYC", count=2, note="Quiet")]').reward == 1.0
    assert simple('[geometry.rectangle_area(width=3.0, height=4.5, unit="ft2")]').reward == 0.0


# Parameters and names -----------------------------------------------------------------------


def test_parameter_errors_have_bfcls_error_types() -> None:
    truth = [{"geometry.rectangle_area": {"width": [3.0], "height": [4.5], "unit": ["m2"]}}]
    reference = rows("simple_python_6", [AREA], truth)
    not_optional = judge(reference, "[geometry.rectangle_area(width=3, height=4.5)]")
    assert error_type(not_optional) == "simple_function_checker:missing_optional"
    required = simple("[geometry.rectangle_area(width=3.0)]")
    assert error_type(required) == "simple_function_checker:missing_required"
    extra = simple("[geometry.rectangle_area(width=3.0, height=4.5, depth=1)]")
    assert error_type(extra) == "simple_function_checker:unexpected_param"
    assert "'depth'" in extra.info["reason"]


def test_names_depend_on_the_model_kind() -> None:
    dotted = "[geometry.rectangle_area(width=3.0, height=4.5)]"
    underscored = dotted.replace("geometry.", "geometry_")
    assert simple(dotted).reward == 1.0  # prompt models keep the dotted name
    wrong = simple(underscored)
    assert (wrong.reward, error_type(wrong)) == (0.0, "simple_function_checker:wrong_func_name")
    call = ("geometry_rectangle_area", {"width": 3.0, "height": 4.5})
    assert simple(tool_message(call), model_kind="function_calling").reward == 1.0
    dotted_call = ("geometry.rectangle_area", call[1])
    assert simple(tool_message(dotted_call), model_kind="function_calling").reward == 0.0
    kept = {"model_kind": "function_calling", "function_names": "dotted"}
    assert simple(tool_message(dotted_call), **kept).reward == 1.0


# Counts and order ----------------------------------------------------------------------------


def test_simple_and_multiple_need_exactly_one_call() -> None:
    once = "geometry.rectangle_area(width=3.0, height=4.5)"
    verdict = simple(f"[{once}, {once}]")
    assert error_type(verdict) == "simple_function_checker:wrong_count"
    reference = rows("multiple_4", [WEATHER, AREA], AREA_TRUTH)
    assert judge(reference, f"[{once}]").reward == 1.0
    assert error_type(judge(reference, "[]")) == "multiple_function_checker:wrong_count"
    wrong = judge(reference, '[get_weather(city="Paris")]')
    assert error_type(wrong) == "simple_function_checker:wrong_func_name"


def test_parallel_calls_match_in_any_order_with_the_exact_count() -> None:
    reference = rows("parallel_3", [WEATHER], WEATHER_TRUTH)
    assert judge(reference, '[get_weather(city="Oslo"), get_weather(city="Paris")]').reward == 1.0
    twice = judge(reference, '[get_weather(city="Oslo"), get_weather(city="Oslo")]')
    assert error_type(twice) == "parallel_function_checker_no_order:cannot_find_match"
    once = judge(reference, '[get_weather(city="Oslo")]')
    assert error_type(once) == "parallel_function_checker_no_order:wrong_count"


def test_parallel_matching_is_greedy_unless_the_departure_is_set() -> None:
    # The first expected call accepts either city and takes the first output call; the
    # second expected call then finds only Oslo left. Any one-to-one pairing would pass.
    truth = [{"get_weather": {"city": ["Paris", "Oslo"]}}, {"get_weather": {"city": ["Paris"]}}]
    reference = rows("parallel_9", [WEATHER], truth)
    output = '[get_weather(city="Paris"), get_weather(city="Oslo")]'
    assert error_type(judge(reference, output)) == (
        "parallel_function_checker_no_order:cannot_find_match"
    )
    assert judge(reference, output, parallel_any_order=True).reward == 1.0


# Relevance -----------------------------------------------------------------------------------


def test_irrelevance_passes_only_without_a_call() -> None:
    reference = rows("irrelevance_2", [WEATHER], None)
    for no_call in ("I cannot answer that with these tools.", "[]", "", "[1, 2]"):
        assert judge(reference, no_call).reward == 1.0, no_call
    verdict = judge(reference, '[get_weather(city="Rome")]')
    assert (verdict.reward, error_type(verdict)) == (0.0, "irrelevance_error:decoder_success")
    assert (
        judge(reference, tool_message(("get_weather", {})), model_kind="function_calling").reward
        == 0
    )
    assert judge(reference, "No tool fits.", model_kind="function_calling").reward == 1.0


def test_relevance_passes_with_any_call() -> None:
    reference = rows("live_relevance_1-0-0", [WEATHER], None)
    assert judge(reference, '[get_weather(city="Anywhere")]').reward == 1.0
    verdict = judge(reference, "No call.")
    assert (verdict.reward, error_type(verdict)) == (0.0, "relevance_error:decoder_failed")


# Reading replies ------------------------------------------------------------------------------


def test_prompt_text_is_decoded_as_bfcl_decodes_it() -> None:
    assert simple("geometry.rectangle_area(width=3.0, height=4.5)").reward == 1.0  # [ ] added
    assert simple("```\n[geometry.rectangle_area(width=3.0, height=4.5)]\n```").reward == 1.0
    assert simple("[geometry.rectangle_area(1, width=3.0, height=4.5)]").reward == 1.0
    assert simple("[geometry.rectangle_area(width=6 / 2, height=4.5)]").reward == 1.0
    for broken in ("The area is 13.5", "Sure: [geometry.rectangle_area(width=3.0, height=4.5)]"):
        verdict = simple(broken)
        assert (verdict.status, verdict.reward) == (Status.OK, 0.0)
        assert error_type(verdict) == "ast_decoder:decoder_failed"


def test_code_fence_with_a_language_is_a_departure_setting() -> None:
    fenced = "```python\n[geometry.rectangle_area(width=3.0, height=4.5)]\n```"
    assert error_type(simple(fenced)) == "ast_decoder:decoder_failed"
    assert simple(fenced, unwrap_code_fence=True).reward == 1.0


def test_bfcl_json_format() -> None:
    output = json.dumps(
        [{"function": "geometry.rectangle_area", "parameters": {"width": 3.0, "height": 4.5}}]
    )
    assert simple(output, return_format="json").reward == 1.0
    assert error_type(simple(output)) == "ast_decoder:decoder_failed"
    keys = output.replace('"function"', '"name"')
    assert error_type(simple(keys, return_format="json")) == "ast_decoder:decoder_failed"


def test_function_calling_reads_tool_calls_and_tool_call_blocks() -> None:
    reference = rows("simple_python_7", [WEATHER], WEATHER_TRUTH[:1])
    fc = {"model_kind": "function_calling"}
    assert judge(reference, tool_message(("get_weather", {"city": "Paris"})), **fc).reward == 1.0
    hermes = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    assert judge(reference, hermes, **fc).reward == 1.0
    thinking = "<think>Paris it is.</think>" + hermes
    assert judge(reference, thinking, **fc).reward == 1.0
    text = judge(reference, '[get_weather(city="Paris")]', **fc)
    assert (text.reward, error_type(text)) == (0.0, "ast_decoder:decoder_failed")
    broken = judge(reference, '<tool_call>{"name": "get_weather", "arguments": {</tool_call>', **fc)
    assert error_type(broken) == "ast_decoder:decoder_failed"


def test_prompt_kind_names_the_setting_when_the_reply_has_tool_calls() -> None:
    reference = rows("simple_python_8", [WEATHER], WEATHER_TRUTH[:1])
    verdict = judge(reference, tool_message(("get_weather", {"city": "Paris"})))
    assert verdict.reward == 0.0 and "bfcl.model_kind" in verdict.info["reason"]


def test_broken_rows_are_task_errors() -> None:
    assert judge(rows("simple_python_9", [AREA], None), "f()").status is Status.ERROR
    undeclared = rows("multiple_9", [WEATHER], AREA_TRUTH)
    assert judge(undeclared, "[geometry.rectangle_area(width=3, height=4.5)]").status is (
        Status.ERROR
    )
    odd_type = {
        "name": "f",
        "parameters": {"properties": {"a": {"type": "number"}}, "required": []},
    }
    verdict = judge(rows("simple_python_10", [odd_type], [{"f": {"a": [1]}}]), "[f(a=1)]")
    assert verdict.status is Status.ERROR and "'number'" in str(verdict.error)


# Java and JavaScript ----------------------------------------------------------------------------

JAVA_FN = {
    "name": "Scheduler.plan",
    "parameters": {
        "type": "dict",
        "properties": {
            "name": {"type": "String"},
            "retries": {"type": "integer"},
            "timeout": {"type": "long"},
            "verbose": {"type": "boolean"},
            "tags": {"type": "ArrayList", "items": {"type": "String"}},
            "context": {"type": "any"},
        },
        "required": ["name", "retries"],
    },
}
JAVA_TRUTH = {
    "Scheduler.plan": {
        "name": ["nightly"],
        "retries": [3],
        "timeout": [5000, ""],
        "verbose": [True, ""],
        "tags": [["a", "b"], ""],
        "context": ["ctx", ""],
    }
}


def java(output: Any, **bfcl: Any) -> Verdict:
    return judge(rows("simple_java_1", [JAVA_FN], [JAVA_TRUTH]), output, **bfcl)


def test_java_values_are_source_text_converted_by_the_declared_type() -> None:
    ok = (
        '[Scheduler.plan(name="nightly", retries=3, timeout=5000L, verbose=true, '
        'tags=new ArrayList<>(Arrays.asList("a", "b")), context=ctx)]'
    )
    assert java(ok).reward == 1.0
    no_suffix = java(ok.replace("5000L", "5000"))  # a long needs its L
    assert (no_suffix.reward, error_type(no_suffix)) == (0.0, "type_error:simple")
    assert java(ok.replace("retries=3", 'retries="3"')).reward == 1.0  # a literal's quotes go


def test_java_function_calling_values_must_be_strings() -> None:
    fc = {"model_kind": "function_calling", "function_names": "dotted"}
    strings = ("Scheduler.plan", {"name": "nightly", "retries": "3", "verbose": "true"})
    assert java(tool_message(strings), **fc).reward == 1.0
    numbers = ("Scheduler.plan", {"name": "nightly", "retries": 3})
    verdict = java(tool_message(numbers), **fc)
    assert (verdict.reward, error_type(verdict)) == (0.0, "type_error:java")


def test_javascript_values_are_source_text_converted_by_the_declared_type() -> None:
    fn = {
        "name": "render",
        "parameters": {
            "type": "dict",
            "properties": {
                "label": {"type": "String"},
                "sizes": {"type": "array", "items": {"type": "float"}},
                "big": {"type": "Bigint"},
                "style": {"type": "dict"},
            },
            "required": ["label"],
        },
    }
    truth = {
        "render": {
            "label": ["Total"],
            "sizes": [[1.5, 2.0], ""],
            "big": [12, ""],
            "style": [{"color": ["red"]}, ""],
        }
    }
    reference = rows("simple_javascript_2", [fn], [truth])
    output = "[render(label='Total', sizes=[1.5, 2.0], big=12n, style={color: 'red'})]"
    assert judge(reference, output).reward == 1.0
    verdict = judge(reference, output.replace("12n", "12"))
    assert (verdict.reward, error_type(verdict)) == (0.0, "type_error:simple")
    assert error_type(judge(reference, "[render(label=5)]")) == "value_error:string"


def test_java_call_text_without_tree_sitter_is_an_infrastructure_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "tree_sitter_java", None)  # as if not installed
    sourcecalls._parser.cache_clear()
    try:
        verdict = java('[Scheduler.plan(name="nightly", retries=3, verbose=true)]')
    finally:
        sourcecalls._parser.cache_clear()
    assert verdict.status is Status.ERROR and sourcecalls.EXTRA in str(verdict.error)


def test_each_task_is_checked_against_its_own_rows() -> None:
    # Rows are read once per task (by the rows' identity); fresh rows, many more than are
    # kept, each with its own answer, are each checked against their own.
    verifier = ToolCallsVerifier({"mode": "bfcl"})
    for i in range(4200):
        reference = rows(f"simple_python_{i}", [WEATHER], [{"get_weather": {"city": [f"C{i}"]}}])
        task = Task(id=reference["question"]["id"], prompt="...", reference=reference)
        for city, reward in ((f"C{i}", 1.0), ("C0", float(i == 0))):
            output = Completion(task_id=task.id, completion=f"[get_weather(city='{city}')]")
            assert verifier.verify(task, output).reward == reward


def test_failed_checks_leave_no_reference_cycles() -> None:
    """A failure held with its traceback would keep frames alive for the garbage collector
    (most outputs an RL run checks fail); every failing kind is freed by reference counts."""
    prompt = ["not a call", "[geometry.rectangle_area(width=3.0, height=", "[f(a=1)]"]
    gc.collect()
    gc.disable()
    try:
        failed = [simple(output) for output in prompt]
        failed.append(simple("[geometry.rectangle_area(width='x', height=4.5)]"))
        failed.append(simple(tool_message(("f", {})), model_kind="function_calling"))
        failed.append(simple("no call", model_kind="function_calling"))
        assert all(v.status is Status.OK and v.reward == 0.0 for v in failed)
        assert gc.collect() == 0
    finally:
        gc.enable()
