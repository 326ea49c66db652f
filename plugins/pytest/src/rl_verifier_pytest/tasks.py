"""The ``pytest-example`` task set: one small task of each supported format."""

from __future__ import annotations

from rl_verifier import Task

ADD_TESTS = """\
from solution import add


def test_small():
    assert add(2, 3) == 5


def test_negative():
    assert add(-2, -3) == -5


class TestZero:
    def test_zero(self):
        assert add(0, 0) == 0
"""

MAX_TEST = """\
def check(candidate):
    assert candidate([1, 5, 3]) == 5
    assert candidate([-1, -7]) == -1
    assert candidate([4]) == 4
"""

MAX_PROMPT = '''\
def largest(numbers: list[int]) -> int:
    """Return the largest number of a non-empty list."""
'''


def example_tasks() -> list[Task]:
    return [
        Task(
            id="pytest-add",
            prompt="Write `add(a, b)` returning the sum of two integers, in a ```python block.",
            verifier="pytest",
            reference={"tests": ADD_TESTS},
        ),
        Task(
            id="humaneval-largest",
            prompt="Complete this function:\n\n" + MAX_PROMPT,
            verifier="pytest",
            reference={"test": MAX_TEST, "entry_point": "largest", "prompt": MAX_PROMPT},
        ),
        Task(
            id="stdio-sum",
            prompt="Read two integers on one line and print their sum.",
            verifier="pytest",
            reference={
                "cases": [
                    {"input": "1 2\n", "output": "3\n"},
                    {"input": "-5 5\n", "output": "0"},
                ]
            },
        ),
    ]
