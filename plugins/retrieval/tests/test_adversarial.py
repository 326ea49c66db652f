"""Completions whose cost the model controls: each is the model's failure (``ok`` with reward 0
and ``info.limit``, or ``invalid``, or an ordinary low reward), never ``timeout`` or ``error``.

No timings are asserted (speed belongs in benchmarks); the cases past the size bound would
take minutes, or raise, on the code before the bound and the linear citation scan.
"""

from __future__ import annotations

from typing import Any

import pytest

from rl_verifier import Status, Task
from rl_verifier.testing import score_once
from rl_verifier_retrieval.verifier import MAX_COMPLETION_CHARS, RetrievalVerifier

DOCS = [
    {"id": f"d{i}", "title": title, "text": f"{title} is a city."}
    for i, title in enumerate(["Paris", "Paris", "Lyon", "Berlin", "London"], start=1)
]
TASK = Task(
    id="paris",
    prompt="What is the capital of France?",
    reference={"answers": ["Paris"], "docs": DOCS, "support": ["d1", "d2"]},
)
OVER = MAX_COMPLETION_CHARS + 1


def pad(text: str, length: int) -> str:
    """``text`` repeated up to exactly ``length`` characters."""
    return (text * (length // len(text) + 1))[:length]


# (completion, config): each longer than max_completion_chars, so none is parsed at all.
OVER_LIMIT: list[tuple[str, dict[str, Any]]] = [
    ("Paris " + pad("[d1]", OVER), {}),
    (pad("[doc:", 200_000), {}),  # unclosed markers: quadratic before the linear scan
    ("Paris " + pad("word ", 1_000_000), {"answer_match": "f1"}),
    (pad("<a>", OVER), {"answer_pattern": r"<a>(.*?)</a>"}),  # a lazy pattern of the user's
    ("Paris " + pad("<c>", OVER), {"citation_pattern": r"<c>(.*?)</c>"}),
    ("Paris " + "".join(f"[doc:x{i}]" for i in range(50_000)), {}),  # citation spam
]


@pytest.mark.parametrize(("text", "config"), OVER_LIMIT, ids=lambda v: str(v)[:24])
def test_past_the_size_bound_scores_zero_naming_the_limit(
    text: str, config: dict[str, Any]
) -> None:
    [score] = score_once(RetrievalVerifier(config), [(TASK, text)])
    assert score.status is Status.OK, score.error
    assert score.reward == 0.0
    assert score.info["limit"] == "max_completion_chars"


def test_a_huge_citation_number_is_an_unknown_id_not_an_error() -> None:
    """int() refuses more than 4,300 digits: "[999...]" raised ValueError (an error row)."""
    huge = "9" * 5_000
    cited, alone = score_once(RetrievalVerifier(), [(TASK, f"Paris [{huge}]"), (TASK, f"[{huge}]")])
    assert cited.status is Status.OK, cited.error
    assert cited.reward == pytest.approx(0.1)  # as "Paris [d9]"
    assert cited.components["hallucinated_share"] == 1.0
    assert alone.status is Status.INVALID, alone.error


def test_leading_zeros_still_name_a_position() -> None:
    [score] = score_once(RetrievalVerifier(), [(TASK, "Paris [0001][d0002]")])
    assert (score.status, score.reward) == (Status.OK, 1.0)


def test_unclosed_markers_under_a_raised_bound_are_judged_within_the_deadline() -> None:
    """With the bound raised, half a megabyte of unclosed markers (and a 100,000-digit
    citation) is still judged before a 5 s deadline in a worker process; the quadratic scan
    (and int()) made these ``timeout`` and ``error``."""
    verifier = RetrievalVerifier({"max_completion_chars": 10_000_000, "timeout_s": 5.0})
    pairs = [
        (TASK, "Paris " + pad("[doc:", 500_000)),
        (TASK, "Paris [" + "9" * 100_000 + "]"),
    ]
    markers, digits = score_once(verifier, pairs, "process", workers=1)
    assert (markers.status, markers.reward) == (Status.OK, 0.0), markers.error
    assert digits.status is Status.OK, digits.error
    assert digits.reward == pytest.approx(0.1)
