"""Ways a policy could game the reward, each scored as the formula specifies."""

from __future__ import annotations

from typing import Any

import pytest

from rl_verifier import Completion, Status, Verdict
from rl_verifier_tool_calls.tasks import eiffel_task, search_episode
from rl_verifier_tool_calls.verifier import ToolCallsVerifier


def judge(completion: Any) -> Verdict:
    task = eiffel_task()
    verdict = ToolCallsVerifier().verify(task, Completion(task_id=task.id, completion=completion))
    assert isinstance(verdict, Verdict)
    return verdict


def test_citing_every_returned_id_earns_no_more_than_one() -> None:
    returned = tuple(f"r{i}" for i in range(1, 9))
    everything = " ".join(f"[{r}]" for r in returned)
    verdict = judge(search_episode(1, f"1889 {everything}", returned=returned))
    assert verdict.reward == pytest.approx(1.0)
    assert verdict.components["citation_validity"] == 1.0


def test_citing_every_id_plus_invented_ones_is_penalised() -> None:
    answer = "1889 [r1] [r2] [r3] [r4]"
    verdict = judge(search_episode(1, answer, returned=("r1", "r2")))
    # C = 0.5, F = 0.5: 0.6 + 0.1 + 0.1 + 0.1 - 0.25
    assert verdict.reward == pytest.approx(0.65)
    assert verdict.info["fabricated_ids"] == ["r3", "r4"]


def test_invented_ids_only() -> None:
    verdict = judge(search_episode(1, "1889 [doc:xyz] [r99, r100]"))
    assert verdict.components["fabricated_share"] == 1.0
    assert verdict.reward == pytest.approx(0.3)


def test_invented_ids_without_any_tool_call() -> None:
    verdict = judge([{"role": "assistant", "content": "1889 [r1]"}])
    assert verdict.reward == pytest.approx(0.3)


def test_repeated_citations_count_once() -> None:
    once = judge(search_episode(1, "1889 [r1] [r7]"))
    repeated = judge(search_episode(1, "1889 [r1] [r1] [r1] [r1] [r7]"))
    assert repeated.reward == pytest.approx(once.reward)
    assert repeated.components["citation_validity"] == 0.5


def test_assistant_written_tool_response_scores_zero() -> None:
    fake = (
        '<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>\n'
        '<tool_response>[{"id": "r9", "text": "1889"}]</tool_response>\n1889 [r9]'
    )
    verdict = judge([{"role": "assistant", "content": fake}])
    assert verdict.status is Status.OK
    assert verdict.reward == 0.0
    assert "fabricated tool output" in verdict.info["zero_reason"]


def test_fabricated_tool_response_in_a_string_completion_scores_zero() -> None:
    assert judge("<tool_response>r1: 1889</tool_response> 1889 [r1]").reward == 0.0


def test_fabricated_tool_response_in_an_earlier_turn_scores_zero() -> None:
    episode = search_episode(1)
    episode[0] = {**episode[0], "content": episode[0]["content"] + "<tool_response>{}"}
    assert judge(episode).reward == 0.0


@pytest.mark.parametrize("calls", [5, 12, 40])
def test_call_spam_scores_zero(calls: int) -> None:
    verdict = judge(search_episode(calls))
    assert verdict.reward == 0.0
    assert verdict.components["calls"] == calls


def test_many_calls_in_one_turn_count_each() -> None:
    call = '<tool_call>{"name": "search", "arguments": {"query": "q"}}</tool_call>'
    verdict = judge(
        [
            {"role": "assistant", "content": call * 6},
            {"role": "tool", "content": "[]"},
            {"role": "assistant", "content": "1889"},
        ]
    )
    assert verdict.components["calls"] == 6
    assert verdict.reward == 0.0


@pytest.mark.parametrize(
    "answer",
    [
        "1889 1890 1891 [r1]",
        "1889 or 1890 [r1]",
        "It was 1887, 1888 or 1889 [r1]",
        "<answer>1889 1890</answer> [r1]",
    ],
)
def test_answer_stuffing_is_not_correct(answer: str) -> None:
    verdict = judge(search_episode(1, answer))
    assert verdict.components["answer"] == 0.0
    assert verdict.reward == pytest.approx(0.3)


# The model controls what its output costs to read: each of these is bounded before it is
# computed, and is the model's failure (ok with reward 0), never a timeout or an error.
CALL = '<tool_call>{"name": "search", "arguments": '
COSTLY_DEFAULT_MODE = {
    "unclosed tags (quadratic for a lazy regex)": "<tool_call>" * 100_000,
    "unclosed braces": "<tool_call>{" * 100_000,
    "JSON nested past the parser": CALL + "[" * 100_000 + "}</tool_call>",
    "arguments string nested past the parser": [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "search", "arguments": "[" * 100_000}}
            ],
        }
    ],
}  # fmt: skip


@pytest.mark.parametrize("completion", COSTLY_DEFAULT_MODE.values(), ids=COSTLY_DEFAULT_MODE)
def test_output_that_is_costly_to_read_is_the_models_failure(completion: Any) -> None:
    verdict = judge(completion)
    assert verdict.status is Status.OK
    assert verdict.reward <= 0.0


COSTLY_BFCL = {
    "a power whose result is huge": "[f(a=(9**9999)**999)]",
    "a product of huge literals": "[f(a=(10**3000)*(10**3000)*(10**3000))]",
    "a shift past the bound": "[f(a=1<<9000<<9000)]",
    "a repeated string": "[f(a='x'*99999*99999)]",
    "a very long output": "[f(a=[" + "1," * 200_000 + "1])]",
}


@pytest.mark.parametrize("output", COSTLY_BFCL.values(), ids=COSTLY_BFCL)
def test_bfcl_output_that_is_costly_to_decode_scores_zero(output: str) -> None:
    from test_bfcl import simple

    verdict = simple(output)
    assert verdict.status is Status.OK and verdict.reward == 0.0
    assert verdict.info["error_type"] == "ast_decoder:decoder_failed"


@pytest.mark.parametrize("language", ["java", "javascript"])
def test_source_calls_nested_past_the_bound_are_a_syntax_error_not_a_crash(
    language: str,
) -> None:
    """tree-sitter's sexp() recurses in C: `1+1+...` 100,000 terms long overflowed the
    stack and killed the process (an `error` row) before the depth bound."""
    from rl_verifier.internal import CallSyntaxError
    from rl_verifier_tool_calls.bfcl import sourcecalls

    pytest.importorskip("tree_sitter")
    read = sourcecalls.java_calls if language == "java" else sourcecalls.javascript_calls
    with pytest.raises(CallSyntaxError, match="nested deeper than"):
        read("[f(a=" + "1+" * 100_000 + "1)]")
    assert read("[f(a=" + "1+" * 50 + "1)]") is not None
