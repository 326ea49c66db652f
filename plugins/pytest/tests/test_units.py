"""Pieces that need no sandbox: extraction, wire format, references, rewards, judging."""

from __future__ import annotations

import math
import random
import re

import pytest

from rl_verifier import Completion, Status, Task
from rl_verifier.testing import get_plugins
from rl_verifier_pytest import PytestVerifier, hardened
from rl_verifier_pytest.extract import extract_code, fenced_blocks
from rl_verifier_pytest.harness import wire
from rl_verifier_pytest.reference import (
    PytestTask,
    ReferenceError,
    StdioTask,
    read_reference,
)
from rl_verifier_pytest.relay import sanitize
from rl_verifier_pytest.scoring import reward_of
from rl_verifier_pytest.stdio import normalise
from rl_verifier_sandbox import Result


class TestExtract:
    TEXT = "a\n```python\nx = 1\n```\nthen\n```py\ny = 2\n```\n```js\nz\n```\n"

    def test_last_and_first(self) -> None:
        assert extract_code(self.TEXT) == "y = 2\n"
        assert extract_code(self.TEXT, "first") == "x = 1\n"

    def test_bare_fence(self) -> None:
        assert extract_code("```\nprint(1)\n```") == "print(1)\n"

    def test_no_code(self) -> None:
        assert extract_code("just words") is None
        assert extract_code("```js\nalert(1)\n```") is None
        assert extract_code("```python\n\n```") is None

    def test_unfenced(self) -> None:
        assert extract_code("def f():\n    return 1\n") is None
        assert extract_code("def f():\n    return 1\n", allow_unfenced=True) is not None
        assert extract_code("not python at all", allow_unfenced=True) is None

    # The fence regex the linear scanner replaced: the same blocks on any text, quadratic time.
    OLD_FENCE = re.compile(
        r"^(?P<fence>`{3,})[ \t]*(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$",
        re.MULTILINE | re.DOTALL,
    )
    PIECES = ("```", "````", "```py", "````x`", "``` \t", "```js", "x", "", "  ```", "```\r")

    def test_blocks_are_the_old_regex_blocks(self) -> None:
        rng = random.Random(28)
        for _ in range(3000):
            text = "\n".join(rng.choice(self.PIECES) for _ in range(rng.randrange(12)))
            text += rng.choice(("", "\n"))
            old = [(m.group("lang"), m.group("body")) for m in self.OLD_FENCE.finditer(text)]
            assert fenced_blocks(text) == old, repr(text)

    def test_unclosed_fences_cost_linear_time(self) -> None:
        """200,000 unclosed openings (1.2 MB): the regex needed hours; the scanner one pass.
        (Timing itself lives in no unit test: this one would simply never finish before.)"""
        text = "```x\n" * 200_000 + "````\nprint(1)\n````\n"  # no 3-backtick closing
        assert extract_code(text) == "print(1)\n"


class TestWire:
    @pytest.mark.parametrize(
        "value",
        [None, True, 0, 1, -(10**30), 1.0, math.inf, "s", [1, (2, 3)], {1: "a", "b": [None]}, ()],
    )
    def test_round_trip_keeps_exact_types(self, value: object) -> None:
        back = wire.decode(wire.loads(wire.dumps({"v": wire.encode(value)}))["v"])
        assert back == value
        assert repr(back) == repr(value)

    def test_nan(self) -> None:
        assert math.isnan(wire.decode(wire.encode(math.nan)))

    @pytest.mark.parametrize("value", [set(), object(), type("I", (int,), {})(1), b"x", len])
    def test_rejects_non_plain_data(self, value: object) -> None:
        with pytest.raises(wire.WireError):
            wire.encode(value)

    @pytest.mark.parametrize("node", [[], ["b", 1], ["i", 3], ["x", 1], ["d", [[1]]], "s"])
    def test_rejects_malformed(self, node: object) -> None:
        with pytest.raises(wire.WireError):
            wire.decode(node)

    def test_relay_sanitises_answers(self) -> None:
        assert sanitize(b'{"ok": ["i", "1"]}') == {"ok": ["i", "1"]}
        assert sanitize(b'{"ok": 1, "verdict": "pass"}')["error"]
        assert sanitize(b"END " + b"[" * 100000)["error"]


class TestReference:
    def test_formats(self) -> None:
        tests = "def test_a():\n    pass\n\nclass TestB:\n    def test_c(self):\n        pass\n"
        spec = read_reference({"tests": tests})
        assert isinstance(spec, PytestTask)
        assert spec.names == {"test_a", "TestB::test_c"}
        assert read_reference({"tests": tests, "expected_tests": 5}).expected == 5  # type: ignore[union-attr]
        cases = read_reference({"cases": [{"input": "1", "output": "1"}]})
        assert isinstance(cases, StdioTask)

    @pytest.mark.parametrize(
        "reference",
        [
            {},
            {"tests": "x = 1\n"},
            {"tests": "def test_(:"},
            {"test": "def check(c): pass", "entry_point": "not an id"},
            {"cases": []},
            {"cases": [{"input": 1, "output": "1"}]},
            {"test": "def check(c): pass", "entry_point": "f", "prompt": "def f(x:\n"},
            {"test": "def check(c): pass", "entry_point": "f", "prompt": "return 1\n"},
            {"test": "def check(c):\n  assert c(", "entry_point": "f"},
        ],
    )
    def test_bad_references(self, reference: dict[str, object]) -> None:
        with pytest.raises(ReferenceError):
            read_reference(reference)

    def test_a_prompt_that_does_not_compile_is_one_bad_task(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Before, each sample ran both sandboxes and came back 'test harness failed'."""
        reference = {"test": "def check(c):\n    assert c(1) == 1\n", "entry_point": "f"}
        task = Task(id="bad-prompt", prompt="p", reference={**reference, "prompt": "def f(x:\n"})
        verifier = PytestVerifier()
        code = Completion(task_id=task.id, completion="```\ndef f(x):\n    return x\n```")
        with caplog.at_level("WARNING", logger="rl_verifier_pytest.verifier"):
            verdicts = [verifier.verify(task, code) for _ in range(3)]
        assert all(v.status is Status.ERROR and v.info["bad_task"] for v in verdicts)
        assert "reference.prompt does not compile" in (verdicts[0].error or "")
        assert [r.getMessage().count("bad task 'bad-prompt'") for r in caplog.records] == [1]

    def test_bad_reference_is_an_error_not_a_wrong_answer(self) -> None:
        task = Task(id="t", prompt="p", reference={})
        verdict = PytestVerifier().verify(task, Completion(task_id="t", completion="```\nx\n```"))
        assert verdict.status is Status.ERROR


class TestScoring:
    def test_rules(self) -> None:
        assert reward_of([True, True], 2, "all_or_nothing") == 1.0
        assert reward_of([True, False], 2, "all_or_nothing") == 0.0
        assert reward_of([True, False], 2, "fraction") == 0.5
        assert reward_of([True], 2, "fraction") == 0.0  # fewer tests than expected
        assert reward_of([], 0, "fraction") == 0.0

    def test_stdout_normalisation(self) -> None:
        assert normalise("1 \n2\t\n\n") == normalise("1\n2") == "1\n2"
        assert normalise("1\n\n2") != normalise("1\n2")


def fake_result(stdout: str) -> Result:
    return Result(0, None, stdout.encode(), b"", False, False, False, None, 0.1, 0.1)


class TestHardenedJudge:
    TASK = PytestTask("", frozenset({"test_a"}), 1)

    def frame(self, run: hardened.Run, reports: dict[str, str], **extra: object) -> str:
        import json

        trip = f"{run.tripwire_file}::{run.tripwire}"
        body = {
            "reports": {**reports, trip: "failed"},
            "raised": {**{k: v != "passed" for k, v in reports.items()}, trip: True},
            "returned": {k: True for k, v in reports.items() if v == "passed"},
            **extra,
        }
        return f"RLV-READY {run.nonce}\nRLV-RESULT {run.nonce} {json.dumps(body)}\n"

    def test_pass(self) -> None:
        run = hardened.new_run()
        text = self.frame(run, {"t.py::test_a": "passed"})
        judged = hardened.judge(self.TASK, run, fake_result(text))
        assert judged.results == [True]

    def test_forged_frames_with_a_guessed_nonce_do_not_count(self) -> None:
        run = hardened.new_run()
        other = hardened.new_run()
        forged = self.frame(other, {"t.py::test_a": "passed"})
        judged = hardened.judge(self.TASK, run, fake_result(forged))
        assert judged.results is None and not judged.ready

    def test_two_frames_mean_tampering(self) -> None:
        run = hardened.new_run()
        text = self.frame(run, {"t.py::test_a": "passed"}) * 2
        judged = hardened.judge(self.TASK, run, fake_result(text))
        assert judged.tampered and judged.results is None

    def test_missing_tests_score_zero(self) -> None:
        run = hardened.new_run()
        text = self.frame(run, {"t.py::test_b": "passed"})
        judged = hardened.judge(self.TASK, run, fake_result(text))
        assert judged.results == [False]


def test_plugin_registers_verifier_and_task_set() -> None:
    plugins = get_plugins()
    assert plugins.registry.get("pytest").cls is PytestVerifier
    tasks = plugins.task_sets["pytest-example"].value()
    assert {task.verifier for task in tasks} == {"pytest"}
    assert len(tasks) == 3


def test_sandbox_unavailable_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import rl_verifier_pytest.verifier as module
    from rl_verifier_sandbox import SandboxUnavailable

    def unavailable(backend: str, image: str | None = None) -> None:
        raise SandboxUnavailable("bubblewrap not found")

    monkeypatch.setattr(module, "get_sandbox", unavailable)
    task = Task(id="t", prompt="p", reference={"cases": [{"input": "", "output": "1"}]})
    verdict = PytestVerifier().verify(
        task, Completion(task_id="t", completion="```\nprint(1)\n```")
    )
    assert verdict.status is Status.ERROR
    assert "bubblewrap not found" in (verdict.error or "")


def test_two_process_mode_refuses_a_backend_without_isolation() -> None:
    task = Task(
        id="t",
        prompt="p",
        reference={"test": "def check(f):\n    assert f()\n", "entry_point": "f"},
    )
    completion = Completion(task_id="t", completion="```python\ndef f():\n    return 1\n```")
    verdict = PytestVerifier({"backend": "process"}).verify(task, completion)
    assert verdict.status is Status.ERROR
    assert "needs bwrap or docker, not process" in (verdict.error or "")


@pytest.mark.requires("bwrap")
def test_stdio_cases_past_the_budget_fail_without_running(verifier: PytestVerifier) -> None:
    cases = [{"input": "", "output": "1"}] * 50
    task = Task(id="t", prompt="p", reference={"cases": cases})
    slow = PytestVerifier({"reward": "fraction", "run_timeout_s": 1.0, "timeout_s": 7.0})
    code = "```python\nwhile True:\n    pass\n```"
    verdict = slow.verify(task, Completion(task_id="t", completion=code))
    assert (verdict.status, verdict.reward) == (Status.OK, 0.0)
    assert verdict.info["timed_out"] and verdict.info["tests"] == 50
