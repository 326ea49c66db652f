"""Proofs whose screening cost the model controls: each scores ``ok`` 0 (``info.limit`` or a
``not_allowed`` reason) before Lean sees it, never ``timeout`` or ``error``.

On the code before these bounds, nested interpolated strings raised RecursionError (an
``error`` row), and nested strings or namespaces of a few tens of kilobytes made the screen
quadratic or cubic (``timeout``), and an answer Lean spent the deadline on was ``timeout``.
No timings are asserted; the fake REPL stands in for Lean.
"""

from __future__ import annotations

import pytest
from lean_helpers import FAKE_CONFIG, STATEMENT, fake_verifier, lean, run_all, task

from rl_verifier import Status
from rl_verifier.testing import score_once
from rl_verifier_lean.config import MAX_PROOF_CHARS
from rl_verifier_lean.lexer import MAX_INTERPOLATION_DEPTH
from rl_verifier_lean.screen import MAX_SCOPE_DEPTH
from rl_verifier_lean.verifier import LeanVerifier

PROOF = "by simp"


def interpolated(levels: int) -> str:
    """``levels`` interpolated strings, each inside the braces of the one before."""
    return 'by exact s!"' + '{s!"' * (levels - 1) + "x" + '"}' * (levels - 1) + '"'


def nested_namespaces(depth: int) -> str:
    """A full file: ``depth`` namespaces around many ``open``s and the trusted theorem."""
    return (
        "namespace A\n" * depth
        + "open B\n" * 1_000
        + f"{STATEMENT} := by simp\n"
        + "end A\n" * depth
    )


def test_a_proof_past_max_proof_chars_scores_zero_without_lean() -> None:
    body = PROOF + " <;> simp" * (MAX_PROOF_CHARS // 9)
    verifier = fake_verifier()
    [verdict] = run_all(verifier, [(task(), lean(body))])
    assert (verdict.status, verdict.reward) == (Status.OK, 0.0), verdict.error
    assert verdict.info["limit"] == "max_proof_chars"
    assert verdict.info["reason"] == "too_long"
    assert verifier.pool().started == 0  # no REPL was started for it


def test_the_bound_counts_the_block_exactly() -> None:
    """The block is the text between the fences, its last newline included."""
    limit = 100
    under = PROOF + " " * (limit - len(PROOF) - 1)  # + "\n" = 100 characters
    over, at = run_all(
        fake_verifier(max_proof_chars=limit), [(task(), lean(under + " ")), (task(), lean(under))]
    )
    assert (over.reward, over.info.get("limit")) == (0.0, "max_proof_chars")
    assert (at.status, at.reward) == (Status.OK, 1.0), at.info


# Each well under max_proof_chars; each rejected by the screen, named.
SCREENED = [
    ('by exact "' + '{"' * 2_000, "not_allowed:lexing"),  # RecursionError before
    ('by exact s!"' + '{s!"' * 2_000, "not_allowed:lexing"),  # RecursionError before
    (interpolated(MAX_INTERPOLATION_DEPTH + 1), "not_allowed:lexing"),
    (nested_namespaces(MAX_SCOPE_DEPTH + 1), "not_allowed:scopes nested deeper than 32"),
]


@pytest.mark.parametrize(("body", "reason"), SCREENED, ids=lambda v: str(v)[:20])
def test_pathological_shapes_are_screened_out(body: str, reason: str) -> None:
    assert len(body) < MAX_PROOF_CHARS
    [score] = score_once(fake_verifier(), [(task(), lean(body))])
    assert (score.status, score.reward) == (Status.OK, 0.0), score.error
    assert score.info["reason"].startswith(reason), score.info


def test_honest_nesting_still_reaches_lean() -> None:
    nested = interpolated(MAX_INTERPOLATION_DEPTH)
    namespaces = nested_namespaces(MAX_SCOPE_DEPTH)
    verdicts = run_all(fake_verifier(), [(task(), lean(nested)), (task(), lean(namespaces))])
    for verdict in verdicts:
        assert verdict.status is Status.OK, verdict.error
        assert not str(verdict.info.get("reason", "")).startswith("not_allowed"), verdict.info


def test_costly_shapes_are_judged_before_the_deadline_in_a_worker() -> None:
    """In a worker process under a 5 s deadline: the quadratic string trials, the cubic
    namespace walk and the recursion all made these ``timeout`` or ``error`` before."""
    verifier = LeanVerifier({**FAKE_CONFIG, "timeout_s": 5.0})
    bodies = [
        'by exact "' + '{"' * 3_000 + "a " * 10_000 + '}"' * 3_000,  # ambiguous strings
        nested_namespaces(2_000),
        'by exact "' + '{"' * 5_000,
    ]
    assert all(len(body) < MAX_PROOF_CHARS for body in bodies)
    scores = score_once(verifier, [(task(), lean(b)) for b in bodies], "process", workers=1)
    for score in scores:
        assert (score.status, score.reward) == (Status.OK, 0.0), score.error
        assert score.info["reason"].startswith("not_allowed:"), score.info


def test_lean_time_on_the_answer_is_the_models_on_the_statement_is_not() -> None:
    """REPL backend: the answer's command running past proof_timeout_s scores ``ok`` 0
    (``info.limit``); the trusted statement running past it stays ``timeout``."""
    verifier = fake_verifier(pool_size=1, proof_timeout_s=0.5)
    slow_statement = "theorem my_thm (n : ℕ) (FAKE_HANG : True) : n + 0 = n"
    answer, statement = run_all(
        verifier,
        [(task(), lean("by simp FAKE_HANG")), (task(slow_statement), lean("by simp"))],
    )
    assert (answer.status, answer.reward) == (Status.OK, 0.0), answer
    assert answer.info["limit"] == "proof_timeout_s"
    assert statement.status is Status.TIMEOUT, statement
