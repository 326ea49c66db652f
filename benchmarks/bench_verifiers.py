"""A verifier with a fixed cost per sample, standing in for a real check (a sandboxed
test run, a Lean check) in the training-loop overlap benchmark."""

from __future__ import annotations

import time

from rl_verifier import Completion, Task, Verdict, Verifier, VerifierConfig


class CostlyConfig(VerifierConfig):
    cost_s: float = 0.05


class CostlyFormat(Verifier):
    """After a fixed delay (cost_s), a reward that varies within a group: the share of
    the reply's characters that are digits (so groups are rarely degenerate)."""

    name = "costly_format"
    Config = CostlyConfig

    def verify(self, task: Task, completion: Completion) -> Verdict:
        assert isinstance(self.config, CostlyConfig)
        time.sleep(self.config.cost_s)
        text = completion.text()
        return Verdict.ok(sum(ch.isdigit() for ch in text) / max(len(text), 1))
