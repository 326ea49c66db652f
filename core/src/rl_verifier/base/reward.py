"""Reward specs: weighted sums of verifiers, where a product of verifiers is a gate.

``0.8*pytest + 0.2*format`` adds two checks; ``format*exact_match`` gives the
answer's reward only when the format check passes; ``1 - 0.5*format`` is allowed.
Each verifier in a spec runs once per sample (a group verifier, ``0.5*judge_rank +
0.5*pytest``, once per task's group of samples) and is reported in ``components``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rl_verifier.base.contracts import STATUS_SEVERITY, Score, Status, Verdict, VerifierRef
from rl_verifier.base.errors import UserError
from rl_verifier.base.registry import VerifierRegistry
from rl_verifier.base.verifier import Verifier

TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+)|(?P<name>[A-Za-z_]\w*)|(?P<op>[-+*]))"
)


@dataclass(frozen=True)
class Term:
    """``weight`` times the product of the named verifiers' rewards."""

    weight: float
    factors: tuple[str, ...]


def parse_expression(expression: str) -> list[Term]:
    """Parse ``[-]w*a*b + c - d ...`` into terms; raise ``UserError`` on bad syntax."""
    terms: list[Term] = []
    factors: list[str] = []
    sign, weight, expect_operand = 1.0, 1.0, True
    position = 0
    text = expression.strip()
    if not text:
        raise UserError("empty reward spec")
    while position < len(text):
        match = TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise UserError(f"reward spec '{expression}': cannot read '{text[position:]}'")
        position = match.end()
        if match["op"] is not None and match["op"] in "+-" and not expect_operand:
            terms.append(Term(sign * weight, tuple(factors)))
            sign, weight, factors, expect_operand = (
                (-1.0 if match["op"] == "-" else 1.0),
                1.0,
                [],
                True,
            )
        elif match["op"] == "-" and expect_operand and not factors and weight == 1.0:
            sign = -sign
        elif match["op"] == "*" and not expect_operand:
            expect_operand = True
        elif match["num"] is not None and expect_operand:
            weight *= float(match["num"])
            expect_operand = False
        elif match["name"] is not None and expect_operand:
            factors.append(match["name"])
            expect_operand = False
        else:
            raise UserError(f"reward spec '{expression}': unexpected '{match.group().strip()}'")
    if expect_operand:
        raise UserError(f"reward spec '{expression}' ends with an operator")
    terms.append(Term(sign * weight, tuple(factors)))
    return terms


class Reward:
    """A reward spec bound to configured verifier instances."""

    def __init__(self, expression: str, verifiers: dict[str, Verifier], versions: dict[str, str]):
        self.expression = expression
        self.terms = parse_expression(expression)
        self.verifiers = verifiers
        self.versions = dict(versions)
        self.groups = [n for n in self.names if verifiers[n].group]
        """The verifiers that judge a task's completions together."""
        self.single = len(self.terms) == 1 and self.terms[0] == Term(1.0, (self.names[0],))
        if self.single:
            verifier = verifiers[self.names[0]]
            self.ref = VerifierRef(
                name=verifier.name,
                version=versions[verifier.name],
                config_hash=verifier.config_hash,
            )
        else:
            parts = {name: [versions[name], v.config_hash] for name, v in verifiers.items()}
            digest = json.dumps({"expression": expression, "parts": parts}, sort_keys=True)
            self.ref = VerifierRef(
                name=" ".join(expression.split()),
                version=",".join(f"{n}=={versions[n]}" for n in sorted(verifiers)),
                config_hash=hashlib.sha256(digest.encode()).hexdigest()[:16],
            )

    @classmethod
    def of(cls, verifier: Verifier, version: str = "unknown") -> Reward:
        """A spec of one already-configured verifier."""
        return cls(verifier.name, {verifier.name: verifier}, {verifier.name: version})

    @property
    def names(self) -> list[str]:
        """The verifiers this spec uses, in order of first mention."""
        return list(dict.fromkeys(f for term in self.terms for f in term.factors))

    def split(self, score: Score) -> dict[str, Score]:
        """Each verifier's own score inside a combined one (the inverse of ``combine``)."""
        if self.single:
            return {self.names[0]: score}
        parts = {}
        for name in self.names:
            info = dict(score.info.get(name) or {})
            status = info.pop("status", score.status.value)
            prefix = f"{name}."
            components = {
                k[len(prefix) :]: v for k, v in score.components.items() if k.startswith(prefix)
            }
            parts[name] = score.model_copy(
                update={
                    "reward": score.components.get(name, 0.0),
                    "status": Status(status),
                    "components": components,
                    "info": info,
                }
            )
        return parts

    def combine(self, verdicts: Mapping[str, Verdict]) -> Verdict:
        """One verdict from the verifiers' verdicts (penalties already applied)."""
        if self.single:
            return verdicts[self.names[0]]
        worst = max((v.status for v in verdicts.values()), key=STATUS_SEVERITY.__getitem__)
        components: dict[str, float] = {}
        info: dict[str, Any] = {}
        for name, verdict in verdicts.items():
            components[name] = verdict.reward
            components.update({f"{name}.{k}": v for k, v in verdict.components.items()})
            info[name] = {"status": verdict.status.value, **verdict.info}
        errors = [f"{name}: {v.error}" for name, v in verdicts.items() if v.error]
        error = "; ".join(errors) or None
        if not worst.judged:
            return Verdict(status=worst, reward=0.0, components=components, info=info, error=error)
        total = sum(
            term.weight * math.prod(verdicts[name].reward for name in term.factors)
            for term in self.terms
        )
        return Verdict(status=worst, reward=total, components=components, info=info, error=error)


def build_reward(
    expression: str,
    registry: VerifierRegistry,
    config: Mapping[str, Any] | None = None,
) -> Reward:
    """Bind a spec to verifiers. For a single verifier ``config`` holds its keys; for a
    composite it maps each verifier name to that verifier's keys."""
    names = list(dict.fromkeys(f for term in parse_expression(expression) for f in term.factors))
    if not names:
        raise UserError(f"reward spec '{expression}' names no verifier")
    config = dict(config or {})
    single = len(names) == 1
    if not single:
        unknown = sorted(set(config) - set(names))
        if unknown:
            raise UserError(
                f"config for '{unknown[0]}' given, but the reward spec uses only: "
                + ", ".join(names)
            )
    verifiers: dict[str, Verifier] = {}
    versions: dict[str, str] = {}
    for name in names:
        entry = registry.get(name)
        settings = config if single else config.get(name, {})
        if not isinstance(settings, Mapping):
            raise UserError(f"config for '{name}' must be a table of keys, got {settings!r}")
        verifiers[name] = entry.cls(settings)
        versions[name] = entry.version
    return Reward(expression, verifiers, versions)
