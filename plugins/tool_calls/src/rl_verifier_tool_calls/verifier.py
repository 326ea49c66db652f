"""The ``tool_calls`` verifier: scores tool-use trajectories, or BFCL function-call outputs."""

from __future__ import annotations

from typing import Any

from rl_verifier import Completion, Task, Verdict, Verifier, reference_answers
from rl_verifier_tool_calls.bfcl.score import BfclTaskError, score_bfcl
from rl_verifier_tool_calls.bfcl.sourcecalls import DecoderMissing
from rl_verifier_tool_calls.config import ToolCallsConfig
from rl_verifier_tool_calls.schema import ToolSpecError, tool_validators
from rl_verifier_tool_calls.scoring import Outcome, reward_bounds, score_trajectory
from rl_verifier_tool_calls.trajectory import read_trajectory


class ToolCallsVerifier(Verifier[ToolCallsConfig]):
    """Scores tool use: legal calls, cited ids that tools returned, few calls, right answer."""

    name = "tool_calls"
    description = (
        "Tool-use trajectories (Hermes/Qwen <tool_call> or OpenAI tool_calls): answer "
        "correctness, citation validity, call legality against JSON Schemas and thrift; "
        "or BFCL AST checking of function-call outputs (mode: bfcl)."
    )
    reward_range = (-0.5, 1.0)
    deterministic = True
    default_timeout_s = 5.0

    def bounds(self) -> tuple[float, float]:
        low, high = (0.0, 1.0) if self.config.mode == "bfcl" else reward_bounds(self.config)
        penalty = self.config.invalid_penalty
        return (min(low, penalty), max(high, penalty))

    def verify(self, task: Task, completion: Completion) -> Verdict:
        if self.config.mode == "bfcl":
            return self._verify_bfcl(task, completion)
        try:
            outcome = self._score(task, completion)
        except ToolSpecError as exc:
            return Verdict.errored(f"task {task.id!r}: {exc}")
        if isinstance(outcome, str):
            return Verdict.invalid(outcome)
        if outcome is None:
            return Verdict.errored(f"task {task.id!r}: reference has no 'answers' or 'answer'")
        return Verdict.ok(outcome.reward, outcome.components, **outcome.info)

    def _verify_bfcl(self, task: Task, completion: Completion) -> Verdict:
        """BFCL's verdict covers every reply, an empty one included (it is "no call")."""
        try:
            outcome = score_bfcl(completion.completion, task.reference, self.config.bfcl)
        except BfclTaskError as exc:
            return Verdict.errored(f"task {task.id!r}: {exc}")
        except DecoderMissing as exc:
            return Verdict.errored(str(exc))
        return Verdict.judged(outcome.reward, outcome.components, outcome.info)

    def _score(self, task: Task, completion: Completion) -> Outcome | str | None:
        """The outcome; a string when the output is empty; None without a gold answer."""
        trajectory = read_trajectory(completion.completion)
        if trajectory.empty:
            return "empty output: no assistant text and no tool call"
        gold = reference_answers(task.reference)
        if not gold:
            return None
        tools = tool_validators([*task_tools(task), *self.config.tools])
        return score_trajectory(trajectory, tools, gold, self.config)


def task_tools(task: Task) -> list[Any]:
    """Tools the task declares in ``reference.tools`` or ``metadata.tools``."""
    tools = task.reference.get("tools", task.metadata.get("tools", []))
    if not isinstance(tools, list):
        raise ToolSpecError("the task's 'tools' must be a list of tool declarations")
    return tools
