"""Control-flow signals from a wrong solution, on bwrap and on docker: each must score 0.

The tests here consume the solution's answers lazily (``map()``, ``filter()``, ``zip()``,
``iter(callable, sentinel)``, ``yield from``, an iterator class, ``async for``, a class
with only ``__getitem__``, ``hasattr()``) or where the standard library only logs a
failure (a thread's target, an event loop's callback). A ``StopIteration``
(``StopAsyncIteration``, ``IndexError``, ``AttributeError``, any exception in a thread or
callback) raised by the solution there used to end the iteration (or the thread) as if the
answers had run out, so the assertions never saw a wrong value and the wrong solution was
paid 1. ``H``: HumanEval task, ``P``: pytest file (two processes, the default), ``P1``: the
same file in the opt-in single-process mode. The solution's own objects (single-process
only) are attacked in ``test_adversarial_objects.py``.
"""

from __future__ import annotations

import textwrap

import pytest

from rl_verifier import Status, Task
from rl_verifier_pytest import PytestVerifier

from .conftest import score

H, P, P1 = "humaneval", "pytest-file", "single-process"

# Test bodies that check ``f(x) == 2 * x`` over ``XS``, each through a lazy consumer.
CONSUMERS = {
    "all_map": "assert all(map(lambda x: f(x) == 2 * x, XS))",
    "for_zip_map": "for x, y in zip(XS, map(f, XS)):\n    assert y == 2 * x",
    "not_any_map": "assert not any(map(lambda x: f(x) != 2 * x, XS))",
    "next_filter_default": "assert next(filter(lambda x: f(x) != 2 * x, XS), None) is None",
    "sum_map": "assert sum(map(lambda x: f(x) != 2 * x, XS)) == 0",
    "starmap": "for x, y in itertools.starmap(lambda x: (x, f(x)), [(x,) for x in XS]):\n"
    "    assert y == 2 * x",
    "iter_sentinel": "todo = list(XS)\n"
    "for x, y in iter(lambda: (todo[0], f(todo.pop(0))) if todo else None, None):\n"
    "    assert y == 2 * x",
    "yield_from_map": "def answers():\n    yield from map(f, XS)\n"
    "for x, y in zip(XS, answers()):\n    assert y == 2 * x",
    "iterator_class": """\
class Answers:
    def __init__(self):
        self.todo = list(XS)
    def __iter__(self):
        return self
    def __next__(self):
        if not self.todo:
            raise StopIteration
        x = self.todo.pop(0)
        return x, f(x)
for x, y in Answers():
    assert y == 2 * x""",
    "async_for": """\
class Answers:
    def __init__(self):
        self.todo = list(XS)
    def __aiter__(self):
        return self
    async def __anext__(self):
        if not self.todo:
            raise StopAsyncIteration
        x = self.todo.pop(0)
        return x, f(x)
async def consume():
    async for x, y in Answers():
        assert y == 2 * x
asyncio.run(consume())""",
    # Ordinary exceptions that CPython clears by itself: an IndexError ends the iteration of
    # a class with only __getitem__; hasattr() is False on an AttributeError.
    "sequence_class": """\
class Answers:
    def __getitem__(self, i):
        return XS[i], f(XS[i])
for x, y in Answers():
    assert y == 2 * x""",
    "hasattr_filter": """\
class Answer:
    def __init__(self, x):
        self.x = x
    @property
    def doubled(self):
        return f(self.x)
answers = [Answer(x) for x in XS]
assert all(a.doubled == 2 * a.x for a in answers if hasattr(a, "doubled"))""",
    # The standard library catches and only logs what a thread or a callback raises.
    "thread_target": """\
out = {}
for x in XS:
    worker = threading.Thread(target=lambda x=x: out.__setitem__(x, f(x)))
    worker.start()
    worker.join()
for x, y in out.items():
    assert y == 2 * x""",
    "loop_callback": """\
out = {}
async def main():
    for x in XS:
        asyncio.get_running_loop().call_soon(lambda x=x: out.__setitem__(x, f(x)))
    await asyncio.sleep(0)
asyncio.run(main())
for x, y in out.items():
    assert y == 2 * x""",
}

RIGHT = "def double(x):\n    return 2 * x\n"
AFTER_FIRST = """\
calls = []

def double(x):
    calls.append(x)
    if len(calls) > 1:
        raise {signal}
    return 2 * x
"""
# Wrong solutions. Each is paired below with the consumers it used to beat.
SIGNALS = {
    "stop_at_once": "def double(x):\n    raise StopIteration\n",
    "stop_after_first": AFTER_FIRST.format(signal="StopIteration"),
    "stop_with_value": "def double(x):\n    raise StopIteration(2 * x)\n",
    # A StopIteration by another name: the same interpreter sees its class, the other
    # process only its name.
    "stop_iteration_subclass": "class Done(StopIteration):\n    pass\n\n"
    "def double(x):\n    raise Done\n",
    "own_class_named_stop_iteration": "class StopIteration(Exception):\n    pass\n\n"
    "def double(x):\n    raise StopIteration\n",
    "stop_async_at_once": "def double(x):\n    raise StopAsyncIteration\n",
    "stop_async_after_first": AFTER_FIRST.format(signal="StopAsyncIteration"),
    "index_error": "def double(x):\n    raise IndexError(x)\n",
    "index_error_after_first": AFTER_FIRST.format(signal="IndexError"),
    "attribute_error": "def double(x):\n    raise AttributeError('doubled')\n",
    "value_error": "def double(x):\n    raise ValueError(x)\n",
    # Same interpreter only: the tests' all() and any() are the solution's.
    "patch_builtin_all": "import builtins\nbuiltins.all = lambda *a: True\n\n"
    "def double(x):\n    return -1\n",
    "patch_builtin_any": "import builtins\nbuiltins.any = lambda *a: False\n\n"
    "def double(x):\n    return -1\n",
}

# Already scored 0 before the change, and pinned: a generator turns a StopIteration into a
# RuntimeError (PEP 479); an exception group is none of its members; a BaseException that is
# not an Exception ends pytest's session (no report: missing tests fail) or fails the test,
# and crosses from the solution's process as a failed call; a StopIteration subclass's
# name is not a builtin's.
CONTAINED_SIGNALS = {
    "exception_group": "def double(x):\n    raise ExceptionGroup('g', [StopIteration()])\n",
    "base_exception_group": "def double(x):\n"
    "    raise BaseExceptionGroup('g', [KeyboardInterrupt()])\n",
    "keyboard_interrupt": "def double(x):\n    raise KeyboardInterrupt\n",
    "keyboard_interrupt_subclass": "class Stop(KeyboardInterrupt):\n    pass\n\n"
    "def double(x):\n    raise Stop\n",
    "system_exit_0": "def double(x):\n    raise SystemExit(0)\n",
    "generator_exit": "def double(x):\n    raise GeneratorExit\n",
}
CONSUMERS["generator_expression"] = "assert all(f(x) == 2 * x for x in XS)"

ALL = (H, P, P1)
SYNC = ["all_map", "for_zip_map", "not_any_map", "next_filter_default", "sum_map", "starmap"]
SYNC += ["iter_sentinel", "yield_from_map", "iterator_class"]
CASES = [  # (consumer, solution, modes): each scored 1 before the change
    *((consumer, "stop_at_once", ALL) for consumer in SYNC),
    *((consumer, "stop_after_first", ALL) for consumer in SYNC),
    ("all_map", "stop_with_value", ALL),
    ("all_map", "stop_iteration_subclass", (P1,)),
    ("all_map", "own_class_named_stop_iteration", (H, P)),
    ("async_for", "stop_async_at_once", ALL),
    ("async_for", "stop_async_after_first", ALL),
    ("sequence_class", "index_error", ALL),
    ("sequence_class", "index_error_after_first", ALL),
    ("hasattr_filter", "attribute_error", ALL),
    *(
        (c, s, ALL)
        for c in ("thread_target", "loop_callback")
        for s in ("value_error", "index_error")
    ),
    ("all_map", "patch_builtin_all", (P1,)),
    ("not_any_map", "patch_builtin_any", (P1,)),
]
CONTAINED = [
    ("generator_expression", "stop_at_once", ALL),
    ("all_map", "stop_iteration_subclass", (H, P)),
    *(("all_map", name, ALL) for name in CONTAINED_SIGNALS),
]

PRELUDE = "import asyncio\nimport itertools\nimport threading\n\nXS = [1, 2, 3]\n"


def task(consumer: str, mode: str) -> Task:
    return built(CONSUMERS[consumer], consumer, mode)


def built(body: str, name: str, mode: str, imports: str = "") -> Task:
    """A task whose test runs ``body`` with the solution's ``double`` as ``f``."""
    prelude = imports + PRELUDE
    if mode == H:
        test = prelude + "\n\ndef check(candidate):\n    f = candidate\n"
        reference = {"test": test + textwrap.indent(body, "    ") + "\n", "entry_point": "double"}
    else:
        tests = prelude + "from solution import double as f\n\n\ndef test_double():\n"
        reference = {"tests": tests + textwrap.indent(body, "    ") + "\n"}
    return Task(id=f"{name}-{mode}", prompt="double", verifier="pytest", reference=reference)


def params(cases: list[tuple[str, str, tuple[str, ...]]]) -> list[object]:
    return [pytest.param(c, s, m, id=f"{s}-{c}-{m}") for c, s, modes in cases for m in modes]


@pytest.mark.parametrize(("consumer", "solution", "mode"), params(CASES) + params(CONTAINED))
def test_a_signal_from_the_solution_scores_zero(
    consumer: str, solution: str, mode: str, fast: PytestVerifier, fast_single: PytestVerifier
) -> None:
    verifier = fast_single if mode == P1 else fast
    code = {**SIGNALS, **CONTAINED_SIGNALS}[solution]
    result = score(verifier, task(consumer, mode), code)
    assert (result.status, result.reward) == (Status.OK, 0.0), (result.info, result.error)


@pytest.mark.parametrize("mode", ALL)
@pytest.mark.parametrize("consumer", CONSUMERS)
def test_the_right_solution_passes_every_consumer(
    consumer: str, mode: str, fast: PytestVerifier, fast_single: PytestVerifier
) -> None:
    """The consumers are sound tests: the right answer passes each of them."""
    result = score(fast_single if mode == P1 else fast, task(consumer, mode), RIGHT)
    assert (result.status, result.reward) == (Status.OK, 1.0), (result.info, result.error)


@pytest.mark.parametrize("mode", [P, P1])
def test_a_signal_at_the_test_modules_top_level_scores_zero(
    mode: str, fast: PytestVerifier, fast_single: PytestVerifier
) -> None:
    """The answers computed once, while pytest imports the test file (no test has started):
    an ``IndexError`` there ended the list of answers, and every test passed on none."""
    tests = PRELUDE + textwrap.dedent(
        """\
        from solution import double as f


        class Answers:
            def __getitem__(self, i):
                return XS[i], f(XS[i])


        ANSWERS = list(Answers())


        def test_double():
            for x, y in ANSWERS:
                assert y == 2 * x
        """
    )
    sample = Task(id="top-level", prompt="double", verifier="pytest", reference={"tests": tests})
    verifier = fast_single if mode == P1 else fast
    result = score(verifier, sample, SIGNALS["index_error"])
    assert (result.status, result.reward) == (Status.OK, 0.0), (result.info, result.error)
    assert score(verifier, sample, RIGHT).reward == 1.0


def test_single_process_watches_the_solution_without_guard_returns(
    fast_single: PytestVerifier,
) -> None:
    """The stop signals are turned into failures whether or not returns are guarded."""
    result = score(fast_single, task("all_map", P1), SIGNALS["stop_at_once"], guard_returns=False)
    assert (result.status, result.reward) == (Status.OK, 0.0), (result.info, result.error)


# A right solution that raises where the tests expect it, caught the ways tests catch it.
RAISING = "def double(x):\n    if x < 0:\n        raise ValueError(x)\n    return 2 * x\n"
EXPECTING = {
    "try_except": "try:\n    f(-1)\nexcept ValueError:\n    pass\nelse:\n    assert False",
    "unittest_call": "unittest.TestCase().assertRaises(ValueError, f, -1)",
    "unittest_with": "with unittest.TestCase().assertRaises(ValueError):\n    f(-1)",
    "suppress": "with contextlib.suppress(ValueError):\n    f(-1)\n    assert False",
}
EXPECTING_PYTEST = {
    "pytest_with": "with pytest.raises(ValueError):\n    f(-1)",
    "pytest_call": "pytest.raises(ValueError, f, -1)",
}


CATCHES = [(c, m) for c in EXPECTING for m in ALL] + [
    (c, m) for c in EXPECTING_PYTEST for m in (P, P1)
]


@pytest.mark.parametrize(("catch", "mode"), CATCHES)
def test_a_failure_the_tests_expect_and_catch_passes(
    catch: str, mode: str, fast: PytestVerifier, fast_single: PytestVerifier
) -> None:
    """Seen by the tests' own handler (``unittest`` drops the traceback): not cut short."""
    body = {**EXPECTING, **EXPECTING_PYTEST}[catch] + "\nassert f(2) == 4"
    imports = "import contextlib\nimport unittest\n" + ("import pytest\n" if mode != H else "")
    sample = built(body, catch, mode, imports)
    result = score(fast_single if mode == P1 else fast, sample, RAISING)
    assert (result.status, result.reward) == (Status.OK, 1.0), (result.info, result.error)
