"""math-verify glue: parse answers and references, compare them.

math-verify bounds its own work with ``signal.alarm``, which works only in a process's main
thread; rl-verifier runs a plain ``verify`` in a worker thread, so its timeouts are off here
(a slow comparison would also come back from math-verify as "not equal", which rl-verifier
must never report for a check that did not finish). The sample's deadline bounds the work
instead: the process executor kills a worker past it, and the sample gets status timeout.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache
from typing import Any

from math_verify import (
    ExprExtractionConfig,
    LatexExtractionConfig,
    LatexNormalizationConfig,
    parse,
    verify,
)

from rl_verifier_math.fastpath import quick_verdict
from rl_verifier_math.quickparse import faster

Parsed = list[Any]  # math-verify's parse: sympy values, then the text they were read from
PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*(?:\\%|%|\\text\{\s*%\s*\}|\s*percent\b)")
MATH_DELIMITERS = ("$", "\\boxed", "\\[", "\\(")
PARSE_CACHE = 4096  # texts whose reading is kept
MATH_SIGN = re.compile(r"[\d\\^=+*/<>()\[\]{}_-]")


class _QuietTimeoutNotice(logging.Filter):
    """Drop math-verify's one-time warning that its timeouts are off: they are, on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Timeout is disabled" not in record.getMessage()


for _name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_name).addFilter(_QuietTimeoutNotice())


@lru_cache(maxsize=2)
def extraction_configs(strip_units: bool) -> tuple[Any, ...]:
    """math-verify's default extraction (LaTeX, then plain expressions), units kept or not."""
    if strip_units:
        return (LatexExtractionConfig(), ExprExtractionConfig())
    normalization = LatexNormalizationConfig(
        basic_latex=True,
        units=False,
        malformed_operators=True,
        nits=True,
        boxed="all",
        equations=False,
    )
    return (LatexExtractionConfig(normalization_config=normalization), ExprExtractionConfig())


def parse_text(text: str, strip_units: bool) -> Parsed:
    """math-verify's reading of ``text`` (its own extraction, no timeout)."""
    return list(_parsed(text, strip_units))


def forget_parses() -> None:
    """Empty the parse cache (for measurements that must start cold)."""
    _parsed.cache_clear()


@lru_cache(maxsize=PARSE_CACHE)
def _parsed(text: str, strip_units: bool) -> tuple[Any, ...]:
    """Parsed once per text and process: a task's reference is read once, not per sample, and
    answers repeated across a group or a batch too (sympy values are immutable). The LaTeX
    parser runs two-stage (rl_verifier_math.quickparse): the same trees, fewer LL predictions."""
    with faster():
        return tuple(parse(text, extraction_configs(strip_units), parsing_timeout=None))


def parse_answer(text: str, source: str, strip_units: bool, bare_latex: bool = True) -> Parsed:
    """An extracted answer as math-verify reads it. With ``bare_latex``, text that has math
    signs but no ``$`` delimiters (``x^2+1`` on an answer line) is also read as LaTeX."""
    if source == "boxed":
        return parse_text(f"\\boxed{{{text}}}", strip_units)
    parsed = parse_text(text, strip_units)
    if not bare_latex or any(d in text for d in MATH_DELIMITERS):
        return parsed
    if MATH_SIGN.search(text) is None or (values(parsed) and reads_whole(parsed, text)):
        return parsed
    latex = parse_text(f"${text}$", strip_units)
    return latex if values(latex) or not values(parsed) else parsed


def reads_whole(parsed: Parsed, text: str) -> bool:
    """math-verify's plain reading used all of ``text`` (not just a number inside it)."""
    shown = [p for p in parsed if isinstance(p, str)]
    return bool(shown) and "".join(shown[-1].split()) == "".join(text.rstrip(".").split())


def parse_reference(text: str, strip_units: bool) -> Parsed:
    """A reference answer: LaTeX with or without ``$`` delimiters, or a plain number."""
    if any(d in text for d in MATH_DELIMITERS):
        return parse_text(text, strip_units)
    return parse_text(f"${text}$", strip_units) or parse_text(text, strip_units)


def values(parsed: Parsed) -> list[Any]:
    """The parsed values, without math-verify's fallback text."""
    return [p for p in parsed if not isinstance(p, str)]


def percent_forms(text: str, percent: bool) -> list[str]:
    """How ``text`` reads with its percentages: the bare number (the sign dropped like a
    unit: 50% is 50), and with ``percent`` also the fraction of 100 (50% is 0.5)."""
    if PERCENT.search(text) is None:
        return [text]
    bare = PERCENT.sub(r"\1", text)
    return [bare, PERCENT.sub(r"\\frac{\1}{100}", text)] if percent else [bare]


def equivalent(gold: Parsed, answer: Parsed, float_rounding: int) -> bool:
    """math-verify's verdict on the parsed reference and answer (any pair of their readings
    equal), with the pairs whose verdict is certain decided without ``simplify``."""
    for expected in gold:
        for reading in answer:
            quick = quick_verdict(expected, reading, float_rounding)
            if quick is None:
                quick = bool(
                    verify(
                        [expected], [reading], float_rounding=float_rounding, timeout_seconds=None
                    )
                )
            if quick:
                return True
    return False
