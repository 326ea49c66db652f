"""The ``math`` verifier's grading: the answer's equivalence to the reference, as math-verify
judges it, after screens that score known reward hacks 0."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from sympy import Float, Integer, MatrixBase, Number, Set, Tuple

from rl_verifier import Completion, Task, Verdict, content_text
from rl_verifier_math.compare import (
    Parsed,
    equivalent,
    parse_answer,
    parse_reference,
    percent_forms,
    values,
)
from rl_verifier_math.config import MathConfig
from rl_verifier_math.extract import Extracted, extract
from rl_verifier_math.kinds import Reading, literal_match, reference_reading
from rl_verifier_math.literals import (
    close,
    juxtaposed,
    not_math,
    plain,
    scientific,
    with_prefixed_as_decimal,
)
from rl_verifier_math.reference import ReferenceError, reference_answers, reference_base
from rl_verifier_math.screens import (
    copies_prompt,
    defines_macros,
    lists_candidates,
    nesting,
    several_boxed,
    too_large,
    too_many_terms,
    unevaluated,
)

SHOWN_CHARS = 200  # of answers kept in info
MAX_DEPTH = 24  # brackets nested deeper are not parsed: parsing time grows with depth
BARE_CHARS = 100  # a completion this short with no words is read as the answer itself
INTEGER = re.compile(r"-?\d{1,50}")
DECIMAL = re.compile(r"-?\d{1,20}\.\d{1,30}")
WORD = re.compile(r"[A-Za-z]{2,}")
COMMAND = re.compile(r"\\[A-Za-z]+")


class Grader:
    """The math verifier's work for one config: imported on the first verdict, since it
    needs sympy and math-verify (half a second to import) and discovery does not."""

    def __init__(self, config: MathConfig) -> None:
        self.config = config

    def verify(self, task: Task, completion: Completion) -> Verdict:
        config = self.config
        try:
            base = reference_base(task.reference)
            references = reference_answers(task.reference)
            kinds = [self._reading(r, base) for r in references]
            golds = [
                self._parse_reference(r)
                for r, k in zip(references, kinds, strict=True)
                if k.kind == "math"
            ]
        except ReferenceError as exc:
            return Verdict.errored(str(exc))
        found = extract(completion.text(), config.extract)
        if found is None:
            return Verdict.invalid(f"no answer found (extract: {config.extract})")
        info: dict[str, Any] = {"answer": found.text[:SHOWN_CHARS], "source": found.source}
        tail = config.extract == "auto" and found.source == "whole" and not bare(found.text)
        text = found.text[-config.max_answer_chars :] if tail else found.text
        limit = self._size_limit(text)
        if limit:
            return zero(limit[1], info, limit=limit[0])
        reason = self._before_parsing(completion.text(), found)
        if reason:
            return zero(reason, info)
        literal = [k for k in kinds if k.kind != "math"]
        if literal:
            written = last_line(text) if tail else text
            if any(literal_match(k, written, base, config.float_rounding) for k in literal):
                return Verdict.ok(1.0, **info, kind=literal[0].kind)
            if not golds:
                return Verdict.ok(0.0, **info, kind=literal[0].kind)
        math_references = [r for r, k in zip(references, kinds, strict=True) if k.kind == "math"]
        return self._judge_math(task, text, found, info, math_references, golds, tail)

    def _judge_math(
        self,
        task: Task,
        text: str,
        found: Extracted,
        info: dict[str, Any],
        references: list[str],
        golds: list[list[Parsed]],
        tail: bool,
    ) -> Verdict:
        """The answer judged by math-verify against math references, after the screens."""
        config = self.config
        number = None if tail else scientific(plain(text))
        if number is not None:  # a literal: compared as the number it denotes
            correct = any(same_number(number, g, config.float_rounding) for g in golds)
            return Verdict.ok(1.0 if correct else 0.0, **info)
        text = with_prefixed_as_decimal(text)
        written_so = any(juxtaposed(r) for r in references)  # the reference reads like that too
        reason = None if tail or written_so else not_math(plain(text))
        if reason:
            return zero(reason, info)
        readings = None if tail else known_reading(text, references, golds)
        if readings is None:
            readings = [
                parse_answer(form, found.source, config.strip_units, bare_latex=not tail)
                for form in percent_forms(text, config.percent)
            ]
        if not any(readings):
            return Verdict.invalid("the answer does not parse as math", **info)
        shown = [p for p in readings[0] if isinstance(p, str)]
        if shown:
            info["parsed"] = shown[-1][:SHOWN_CHARS]
            reason = not_math(shown[-1]) if tail and not written_so else None
            if reason:
                return zero(reason, info)
        reason = self._screen(task, text, shown, readings[0], references, golds, tail)
        if reason:
            return zero(reason, info)
        correct = any(
            equivalent(form, reading, config.float_rounding)
            for gold in golds
            for form in gold
            for reading in readings
        )
        return Verdict.ok(1.0 if correct else 0.0, **info)

    def _reading(self, reference: str, base: int | None) -> Reading:
        """How one reference answer is compared; ReferenceError when it is not in ``base``."""
        reading = reference_reading(reference, base)
        if reading is None:
            raise ReferenceError(
                f"reference answer {reference[:SHOWN_CHARS]!r} is not an integer in base {base}"
            )
        return reading

    def _parse_reference(self, reference: str) -> list[Parsed]:
        """Each reading of a reference answer; ReferenceError when it does not parse."""
        config = self.config
        reference = with_prefixed_as_decimal(reference)
        forms = [
            parse_reference(f, config.strip_units) for f in percent_forms(reference, config.percent)
        ]
        if not forms[0]:
            raise ReferenceError(f"reference answer {reference[:SHOWN_CHARS]!r} does not parse")
        return forms

    def _size_limit(self, text: str) -> tuple[str, str] | None:
        """(the limit, why) when the answer is too long or nested too deep to parse."""
        longest = self.config.max_answer_chars
        if len(text) > longest:
            return "max_answer_chars", f"answer longer than max_answer_chars ({longest})"
        reason = nesting(text, MAX_DEPTH)
        return ("nesting", reason) if reason else None

    def _before_parsing(self, completion: str, found: Extracted) -> str | None:
        """Screens on the text: macro definitions, several boxed answers."""
        if self.config.reject_hedges:
            return defines_macros(completion) or several_boxed(found.boxed)
        return defines_macros(completion)

    def _screen(
        self,
        task: Task,
        text: str,
        shown: list[str],
        parsed: Parsed,
        references: list[str],
        golds: list[list[Parsed]],
        tail: bool,
    ) -> str | None:
        """The first hack screen the parsed answer fails, if any."""
        config = self.config
        answer_values = values(parsed)
        for value in answer_values:
            reason = too_large(value, config.max_digits) or too_many_terms(value, config.max_terms)
            if reason:
                return reason
        several = any(multi_valued(r, g[0]) for r, g in zip(references, golds, strict=True))
        if config.reject_hedges and not several:
            reason = lists_candidates(text, at_end_only=tail)
            if reason:
                return reason
        if config.reject_unevaluated:
            gold_values = [values(g[0])[0] for g in golds if values(g[0])]
            if answer_values:
                reason = unevaluated(answer_values[0], gold_values)
                if reason:
                    return reason
            answers = shown if tail else [text, *shown]
            return copies_prompt(answers, references, prompt_text(task))
        return None


def zero(reason: str, info: dict[str, Any], limit: str | None = None) -> Verdict:
    """A judged answer that scores 0 because of a hack screen, or because checking it would
    cost more than a size ``limit`` allows (the model's answer, the model's failure)."""
    if limit is None and reason.startswith("too large"):
        limit = "max_digits" if "digits" in reason else "max_terms"
    if limit:
        info = {**info, "limit": limit}
    return Verdict.ok(0.0, **info, reason=reason)


def known_reading(
    text: str, references: list[str], golds: list[list[Parsed]]
) -> list[Parsed] | None:
    """The answer's reading without parsing it, where that is certain: an integer or decimal
    literal is that Integer or Float (as math-verify reads it), and an answer written as a
    reference is read as that reference was."""
    written = text.strip()
    if INTEGER.fullmatch(written):
        return [[Integer(int(written)), written]]
    if DECIMAL.fullmatch(written):
        return [[Float(written), written]]
    compact = "".join(written.split())
    for reference, gold in zip(references, golds, strict=True):
        if "".join(reference.split()) == compact and "%" not in compact:
            return gold
    return None


def bare(text: str) -> bool:
    """A completion that is only an answer: one short line with no words (``2.0 + 7.0i``)."""
    return (
        len(text) <= BARE_CHARS and "\n" not in text and WORD.search(COMMAND.sub("", text)) is None
    )


def last_line(text: str) -> str:
    """The last non-empty line of ``text``: where a bare answer ends a completion."""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else text


def same_number(number: Decimal, gold: list[Parsed], places: int) -> bool:
    """A number in scientific notation against a reference that is one real number."""
    value = values(gold[0])[0] if values(gold[0]) else None
    if not isinstance(value, Number) or not value.is_real:
        return False
    return close(number, Decimal(str(Float(value, 30))), places)


def multi_valued(reference: str, gold: Parsed) -> bool:
    """A reference that is itself several values (a set, tuple, interval or list)."""
    if any(isinstance(v, Set | Tuple | MatrixBase | list) for v in values(gold)):
        return True
    return lists_candidates(reference, at_end_only=False) is not None


def prompt_text(task: Task) -> str:
    """The text of the task's prompt (every message of a chat prompt)."""
    if isinstance(task.prompt, str):
        return task.prompt
    return "\n".join(content_text(m.content) for m in task.prompt)
