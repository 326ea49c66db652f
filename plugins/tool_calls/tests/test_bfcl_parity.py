"""BFCL mode against bfcl-eval itself, on cases built from bfcl-eval's own data: the ground
truth of every AST category and mutations of it (every kind of difference issue 15 found),
plus relevance and irrelevance replies, for prompt and function-calling models."""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata

import pytest
import tool_calls_bfcl_parity as parity

MIN_AGREEMENT = 1.0  # exact: every verdict and every error type as bfcl-eval gives it


@pytest.fixture(scope="module")
def official() -> parity.Official:
    try:
        version = metadata.version("bfcl-eval")
    except metadata.PackageNotFoundError:
        pytest.fail(
            "bfcl-eval is not installed: "
            "pip install --no-deps -r plugins/tool_calls/requirements-parity.txt"
        )
    assert version == parity.BFCL_VERSION, f"parity is measured against {parity.BFCL_VERSION}"
    return parity.Official()


@pytest.fixture(scope="module")
def cases(official: parity.Official) -> list[parity.Case]:
    return parity.all_cases(official)


@pytest.fixture(scope="module")
def results(
    official: parity.Official, cases: list[parity.Case]
) -> tuple[dict[str, parity.Tally], list[tuple[parity.Case, bool, bool]]]:
    return parity.compare(official, cases)


def test_cases_cover_every_category_setting_and_verdict(
    official: parity.Official, cases: list[parity.Case]
) -> None:
    for category in parity.CATEGORIES:
        mine = [c for c in cases if c.category == category]
        settings = {c.setting for c in mine}
        assert {"prompt", "fc_dotted", "fc_underscored"} <= settings, category
        verdicts = {official.verdict(c) for c in mine[:500]}
        assert verdicts == {True, False}, f"{category}: the cases need passes and failures"
    kinds = {c.kind for c in cases}
    issue_kinds = {
        "single_quote_in_string",
        "double_quote_in_string",
        "tab_in_string",
        "newline_in_string",
        "nested_string_case",
        "list_as_tuple",
        "underscored_name",
        "dotted_name",
        "ints_in_float_list",
        "swapped_values",
        "none_optional",
        "empty_string_optional",
        "wrong_name",
        "missing_required",
        "extra_param",
        "wrong_value",
        "int_to_float",
        "float_to_int",
        "number_to_string",
        "bool_to_string",
        "duplicate_call",
        "missing_call",
        "reversed_calls",
    }
    assert issue_kinds <= kinds, sorted(issue_kinds - kinds)


def below_minimum(
    tallies: dict[str, parity.Tally], share_of: Callable[[parity.Tally], tuple[float, int]]
) -> dict[str, str]:
    """The categories whose agreement (a share of a count, from ``share_of``) is below
    MIN_AGREEMENT, each with its figures."""
    low = {}
    for category, tally in tallies.items():
        share, count = share_of(tally)
        if share < MIN_AGREEMENT:
            low[category] = f"{share:.4%} of {count}"
    return low


def test_every_category_agrees_with_bfcl_eval(
    results: tuple[dict[str, parity.Tally], list[tuple[parity.Case, bool, bool]]],
) -> None:
    tallies, differ = results
    low = below_minimum(tallies, lambda tally: (tally.agreement, tally.cases))
    examples = [
        f"{c.question['id']} {c.setting} {c.kind}: bfcl-eval {o}, ours {m}: "
        f"{c.text or c.calls!r:.200}"
        for c, o, m in differ[:10]
    ]
    assert not low, f"agreement below {MIN_AGREEMENT:.1%}: {low}; e.g. {examples}"
    assert all(tally.cases > 0 for tally in tallies.values())


def test_rejections_carry_bfcl_evals_error_type(
    results: tuple[dict[str, parity.Tally], list[tuple[parity.Case, bool, bool]]],
) -> None:
    """Where both reject, info.error_type is the error type bfcl-eval's runner reports."""
    tallies, _ = results
    low = below_minimum(tallies, lambda tally: (tally.error_agreement, tally.rejected))
    examples = [
        f"{c.question['id']} {c.setting} {c.kind}: bfcl-eval {theirs}, ours {mine}"
        for tally in tallies.values()
        for c, theirs, mine in tally.error_examples[:3]
    ]
    assert not low, f"error types agree below {MIN_AGREEMENT:.1%}: {low}; e.g. {examples}"
    assert all(tally.rejected > 0 for tally in tallies.values())


def test_ground_truth_is_accepted_at_least_as_often_as_by_bfcl_eval(
    results: tuple[dict[str, parity.Tally], list[tuple[parity.Case, bool, bool]]],
) -> None:
    tallies, _ = results
    for category, tally in tallies.items():
        if category in parity.RELEVANCE:
            continue
        assert tally.truth > 0, category
        assert tally.truth_ours >= tally.truth_official, (
            f"{category}: ground truth accepted {tally.truth_ours}/{tally.truth}, "
            f"bfcl-eval {tally.truth_official}/{tally.truth}"
        )
