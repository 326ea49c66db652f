"""Control flow through the solution's own objects, in the opt-in single-process mode (the
only one where the tests hold them), on bwrap and on docker: each attack must score 0.

A wrong solution's methods, properties, ``__eq__``, ``__bool__``, ``__init__``, async
methods, generators and cached or decorated functions raised a ``StopIteration`` (or an
``IndexError``) into the tests' ``map()``, ``filter()``, ``async for`` or sequence
iteration, or its ``__exit__`` (its own, inherited from ``contextlib.suppress``, or that of
a ``@contextmanager`` it made, or a ``contextlib.suppress`` it returned) swallowed the
failed assertion or its own failure: each was paid 1. Right solutions that use the same
protocols as they are meant to must still pass.
"""

from __future__ import annotations

import textwrap

import pytest

from rl_verifier import Status, Task
from rl_verifier_pytest import PytestVerifier

from .conftest import score

PRELUDE = "import asyncio\nimport functools\nimport inspect\nimport pytest\n\nXS = [1, 2, 3]\n"

# name: (solution, tests). Each test checks that some object of the solution doubles XS.
ATTACKS = {
    "method_stop": (
        """
        class Doubler:
            def apply(self, x):
                raise StopIteration
        """,
        """
        from solution import Doubler
        def test_double():
            d = Doubler()
            assert all(map(lambda x: d.apply(x) == 2 * x, XS))
        """,
    ),
    "staticmethod_stop": (
        """
        class Doubler:
            @staticmethod
            def apply(x):
                raise StopIteration
        """,
        """
        from solution import Doubler
        def test_double():
            assert all(map(lambda x: Doubler.apply(x) == 2 * x, XS))
        """,
    ),
    "classmethod_stop": (
        """
        class Doubler:
            @classmethod
            def apply(cls, x):
                raise StopIteration
        """,
        """
        from solution import Doubler
        def test_double():
            assert all(map(lambda x: Doubler.apply(x) == 2 * x, XS))
        """,
    ),
    "property_stop": (
        """
        class Num:
            def __init__(self, x):
                self.x = x
            @property
            def doubled(self):
                raise StopIteration
        """,
        """
        from solution import Num
        def test_double():
            assert all(map(lambda x: Num(x).doubled == 2 * x, XS))
        """,
    ),
    "cached_property_stop": (
        """
        import functools
        class Num:
            def __init__(self, x):
                self.x = x
            @functools.cached_property
            def doubled(self):
                raise StopIteration
        """,
        """
        from solution import Num
        def test_double():
            assert all(map(lambda x: Num(x).doubled == 2 * x, XS))
        """,
    ),
    "init_stop": (
        """
        class Num:
            def __init__(self, x):
                raise StopIteration
            def doubled(self):
                return -1
        """,
        """
        from solution import Num
        def test_double():
            assert all(map(lambda x: Num(x).doubled() == 2 * x, XS))
        """,
    ),
    "eq_stop": (
        """
        class Num:
            def __init__(self, x):
                self.x = x
            def doubled(self):
                return Num(-1)
            def __eq__(self, other):
                raise StopIteration
        """,
        """
        from solution import Num
        def test_double():
            assert all(map(lambda x: Num(x).doubled() == Num(2 * x), XS))
        """,
    ),
    "bool_stop": (
        """
        class Wrong:
            def __init__(self, x):
                self.x = x
            def __bool__(self):
                raise StopIteration
        """,
        """
        from solution import Wrong
        def test_double():
            for x in filter(Wrong, XS):
                assert False, x
        """,
    ),
    "cached_method_stop": (
        """
        import functools
        class Doubler:
            @functools.cache
            def apply(self, x):
                raise StopIteration
        """,
        """
        from solution import Doubler
        def test_double():
            d = Doubler()
            assert all(map(lambda x: d.apply(x) == 2 * x, XS))
        """,
    ),
    "cached_function_stop": (
        """
        import functools
        @functools.lru_cache(maxsize=None)
        def double(x):
            raise StopIteration
        """,
        """
        from solution import double
        def test_double():
            assert all(map(lambda x: double(x) == 2 * x, XS))
        """,
    ),
    "partial_stop": (
        """
        import functools
        def _times(k, x):
            raise StopIteration
        double = functools.partial(_times, 2)
        """,
        """
        from solution import double
        def test_double():
            assert all(map(lambda x: double(x) == 2 * x, XS))
        """,
    ),
    "partial_subclass_stop": (
        """
        import functools
        class Times(functools.partial):
            pass
        def _times(k, x):
            raise StopIteration
        double = Times(_times, 2)
        """,
        """
        from solution import double
        def test_double():
            assert all(map(lambda x: double(x) == 2 * x, XS))
        """,
    ),
    "bound_method_stop": (
        """
        class Doubler:
            def apply(self, x):
                raise StopIteration
        double = Doubler().apply
        """,
        """
        from solution import double
        def test_double():
            assert all(map(lambda x: double(x) == 2 * x, XS))
        """,
    ),
    "async_method_stop": (
        """
        class Doubler:
            async def apply(self, x):
                raise StopAsyncIteration
        """,
        """
        from solution import Doubler
        class Answers:
            def __init__(self):
                self.todo, self.doubler = list(XS), Doubler()
            def __aiter__(self):
                return self
            async def __anext__(self):
                if not self.todo:
                    raise StopAsyncIteration
                x = self.todo.pop(0)
                return x, await self.doubler.apply(x)
        def test_double():
            async def main():
                async for x, y in Answers():
                    assert y == 2 * x
            asyncio.run(main())
        """,
    ),
    "generator_index_error": (
        """
        class Doubler:
            def answers(self, x):
                raise IndexError(x)
                yield 2 * x
        """,
        """
        from solution import Doubler
        class Answers:
            def __getitem__(self, i):
                return XS[i], next(Doubler().answers(XS[i]))
        def test_double():
            for x, y in Answers():
                assert y == 2 * x
        """,
    ),
    "exit_swallows_assertion": (
        """
        class Session:
            def __enter__(self):
                return self
            def __exit__(self, *exc):
                return True
            def double(self, x):
                return -1
        """,
        """
        from solution import Session
        def test_double():
            with Session() as s:
                assert s.double(1) == 2
        """,
    ),
    "exit_swallows_own_failure": (
        """
        class Session:
            def __enter__(self):
                return self
            def __exit__(self, *exc):
                return True
            def double(self, x):
                raise ValueError(x)
        """,
        """
        from solution import Session
        def test_double():
            with Session() as s:
                assert s.double(1) == 2
        """,
    ),
    "exit_stop": (
        """
        class Session:
            def __enter__(self):
                return self
            def __exit__(self, *exc):
                raise StopIteration
            def double(self, x):
                return -1
        """,
        """
        from solution import Session
        def checked(x):
            with Session() as s:
                assert s.double(x) == 2 * x
            return True
        def test_double():
            assert all(map(checked, XS))
        """,
    ),
    "aexit_swallows_assertion": (
        """
        class Session:
            async def __aenter__(self):
                return self
            async def __aexit__(self, *exc):
                return True
            def double(self, x):
                return -1
        """,
        """
        from solution import Session
        def test_double():
            async def main():
                async with Session() as s:
                    assert s.double(1) == 2
            asyncio.run(main())
        """,
    ),
    "inherited_suppress": (
        """
        import contextlib
        class Session(contextlib.suppress):
            def __init__(self):
                super().__init__(BaseException)
            def double(self, x):
                raise KeyError(x)
        """,
        """
        from solution import Session
        def test_double():
            with Session() as s:
                assert Session().double(1) == 2
        """,
    ),
    "contextmanager_swallows_own_failure": (
        """
        import contextlib
        class Db:
            @contextlib.contextmanager
            def session(self):
                try:
                    yield self
                except Exception:
                    pass
            def double(self, x):
                raise KeyError(x)
        """,
        """
        from solution import Db
        def test_double():
            db = Db()
            with db.session():
                assert db.double(1) == 2
        """,
    ),
    "returned_suppress": (
        """
        import contextlib
        class Db:
            def session(self):
                return contextlib.suppress(Exception)
            def double(self, x):
                return -1
        """,
        """
        from solution import Db
        def test_double():
            db = Db()
            with db.session():
                assert db.double(1) == 2
        """,
    ),
}
# The harness imports the solution itself (before the tests) where returns are guarded:
# a solution that failed that import was imported again, unwatched, by the tests.
GUARDED = {
    "watched_only_once_imported": (
        """
        import sys
        if not getattr(sys, "rlv_imported_once", False):
            sys.rlv_imported_once = True
            raise ImportError("not this time")
        def double(x):
            raise StopIteration
        """,
        """
        from solution import double
        def test_double():
            assert all(map(lambda x: double(x) == 2 * x, XS))
        """,
    ),
}
# Attacks through a function that only guard_returns: false lets return what it returns.
UNGUARDED = {
    "async_function_stop": (
        """
        async def double(x):
            raise StopAsyncIteration
        """,
        """
        from solution import double
        class Answers:
            def __init__(self):
                self.todo = list(XS)
            def __aiter__(self):
                return self
            async def __anext__(self):
                if not self.todo:
                    raise StopAsyncIteration
                x = self.todo.pop(0)
                return x, await double(x)
        def test_double():
            async def main():
                async for x, y in Answers():
                    assert y == 2 * x
            asyncio.run(main())
        """,
    ),
}

# Right solutions that use the protocols as meant: a StopIteration within the solution's
# own code and from __next__, an IndexError from __getitem__, an AttributeError from
# __getattr__, exceptions the tests expect, a suppressing __exit__, a @contextmanager, async
# and generator functions, dataclasses, enums, named tuples, properties, caches, threads.
RIGHT = {
    "iterator": (
        """
        class Tokens:
            def __init__(self, text):
                self._it = iter(text.split())
            def _advance(self):
                return next(self._it)
            def __iter__(self):
                return self
            def __next__(self):
                return self._advance().upper()
        def first(text):
            try:
                return Tokens(text)._advance()
            except StopIteration:
                return None
        """,
        """
        from solution import Tokens, first
        def test_tokens():
            assert list(Tokens("a b c")) == ["A", "B", "C"]
            assert first("") is None
            assert all(map(str.isupper, Tokens("x y")))
        """,
    ),
    "sequence": (
        """
        class Squares:
            def __init__(self, n):
                self.n = n
            def __getitem__(self, i):
                if i >= self.n:
                    raise IndexError(i)
                return i * i
            def __getattr__(self, name):
                raise AttributeError(name)
        """,
        """
        from solution import Squares
        def test_squares():
            assert list(Squares(4)) == [0, 1, 4, 9]
            assert not hasattr(Squares(1), "nope")
            assert getattr(Squares(1), "nope", 5) == 5
            assert 4 in Squares(3)
        """,
    ),
    "expected_exceptions": (
        """
        class BadInput(ValueError):
            pass
        def parse(s):
            try:
                return int(s)
            except ValueError as e:
                raise BadInput(s) from e
        """,
        """
        import unittest
        from solution import parse, BadInput
        def test_parse():
            with pytest.raises(BadInput, match="x"):
                parse("x")
            pytest.raises(ValueError, parse, "y")
            unittest.TestCase().assertRaises(ValueError, parse, "z")
            try:
                parse("w")
            except ValueError as e:
                assert isinstance(e.__cause__, ValueError)
            assert parse("3") == 3
        """,
    ),
    "suppressing_context_managers": (
        """
        import contextlib
        class Ignore:
            def __init__(self, *kinds):
                self.kinds = kinds
            def __enter__(self):
                return self
            def __exit__(self, kind, exc, tb):
                return kind is not None and issubclass(kind, self.kinds)
        class Db:
            def __init__(self):
                self.log = []
            @contextlib.contextmanager
            def session(self):
                self.log.append("begin")
                try:
                    yield self
                except KeyError:
                    self.log.append("rollback")
                else:
                    self.log.append("commit")
        """,
        """
        from solution import Ignore, Db
        def test_ignore():
            with Ignore(KeyError):
                {}["x"]
            with pytest.raises(ValueError):
                with Ignore(KeyError):
                    raise ValueError
        def test_db():
            db = Db()
            with db.session():
                pass
            with db.session():
                raise KeyError
            assert db.log == ["begin", "commit", "begin", "rollback"]
        """,
    ),
    "classes": (
        """
        import dataclasses, enum, functools
        from typing import NamedTuple
        @dataclasses.dataclass(frozen=True)
        class P:
            x: int
            y: int
            def norm1(self):
                return abs(self.x) + abs(self.y)
        class Color(enum.Enum):
            RED = 1
            BLUE = 2
            def other(self):
                return Color.BLUE if self is Color.RED else Color.RED
        class Pair(NamedTuple):
            a: int
            b: int
            def total(self):
                return self.a + self.b
        class Temp:
            def __init__(self, c):
                self._c = c
            @property
            def c(self):
                return self._c
            @c.setter
            def c(self, v):
                if v < -273:
                    raise ValueError(v)
                self._c = v
            @classmethod
            def from_f(cls, f):
                return cls((f - 32) * 5 / 9)
            @staticmethod
            def valid(v):
                return v >= -273
            @functools.cached_property
            def k(self):
                return self._c + 273
            def __eq__(self, o):
                return isinstance(o, Temp) and o._c == self._c
            def __hash__(self):
                return hash(self._c)
        @functools.lru_cache(maxsize=None)
        def fib(n):
            return n if n < 2 else fib(n - 1) + fib(n - 2)
        """,
        """
        from solution import P, Color, Pair, Temp, fib
        def test_classes():
            assert P(1, -2).norm1() == 3 and {P(1, 2), P(1, 2)} == {P(1, 2)}
            assert Color.RED.other() is Color.BLUE and Color(2) is Color.BLUE
            with pytest.raises(ValueError):
                Color(3)
            assert Pair(1, 2).total() == 3
            t = Temp.from_f(212)
            assert t.c == 100 and Temp.valid(0) and t.k == 373
            with pytest.raises(ValueError):
                t.c = -300
            assert {Temp(1), Temp(1)} == {Temp(1)}
            class Sub(Temp):
                def twice(self):
                    return self.c * 2
            assert Sub(2).twice() == 4
            assert fib(30) == 832040 and fib.cache_info().hits > 0
        """,
    ),
    "input_and_threads": (
        """
        import threading
        def read_sum():
            return sum(map(int, input().split()))
        def par_double(xs):
            out = [None] * len(xs)
            def work(i):
                out[i] = 2 * xs[i]
            workers = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            return out
        """,
        """
        from solution import read_sum, par_double
        def test_input(monkeypatch):
            monkeypatch.setattr("builtins.input", lambda: "1 2 3")
            assert read_sum() == 6
        def test_threads():
            assert par_double(XS) == [2, 4, 6]
        """,
    ),
}
RIGHT_UNGUARDED = {
    "async_and_generators": (
        """
        import asyncio
        async def double(x):
            await asyncio.sleep(0)
            return 2 * x
        async def count(n):
            for i in range(n):
                yield i
        def fib(n):
            a, b = 0, 1
            for _ in range(n):
                yield a
                a, b = b, a + b
        class Countdown:
            def __init__(self, n):
                self.n = n
            def __aiter__(self):
                return self
            async def __anext__(self):
                if self.n <= 0:
                    raise StopAsyncIteration
                self.n -= 1
                return self.n
        """,
        """
        from solution import double, count, fib, Countdown
        def test_async():
            assert inspect.iscoroutinefunction(double)
            assert asyncio.run(double(3)) == 6
            async def main():
                return [x async for x in count(3)], [x async for x in Countdown(3)]
            assert asyncio.run(main()) == ([0, 1, 2], [2, 1, 0])
            async def slow():
                return await asyncio.wait_for(asyncio.sleep(5), 0.01)
            with pytest.raises(TimeoutError):
                asyncio.run(slow())
        def test_generator():
            assert inspect.isgeneratorfunction(fib)
            assert list(fib(6)) == [0, 1, 1, 2, 3, 5]
            g = fib(3)
            next(g)
            g.close()
        """,
    ),
}


def task(name: str, tests: str) -> Task:
    reference = {"tests": PRELUDE + textwrap.dedent(tests)}
    return Task(id=name, prompt="objects", verifier="pytest", reference=reference)


def cases(table: dict[str, tuple[str, str]], guard: bool) -> list[object]:
    return [pytest.param(name, guard, id=f"{name}-guard={guard}") for name in table]


ATTACK_CASES = [*cases(ATTACKS, True), *cases(ATTACKS, False)]
ATTACK_CASES += cases(GUARDED, True) + cases(UNGUARDED, False)


@pytest.mark.parametrize(("name", "guard"), ATTACK_CASES)
def test_control_flow_through_the_solutions_objects_scores_zero(
    name: str, guard: bool, fast_single: PytestVerifier
) -> None:
    solution, tests = {**ATTACKS, **GUARDED, **UNGUARDED}[name]
    result = score(fast_single, task(name, tests), textwrap.dedent(solution), guard_returns=guard)
    assert (result.status, result.reward) == (Status.OK, 0.0), (result.info, result.error)


@pytest.mark.parametrize(
    ("name", "guard"), cases(RIGHT, True) + cases(RIGHT, False) + cases(RIGHT_UNGUARDED, False)
)
def test_right_solutions_objects_still_pass(
    name: str, guard: bool, fast_single: PytestVerifier
) -> None:
    solution, tests = {**RIGHT, **RIGHT_UNGUARDED}[name]
    result = score(fast_single, task(name, tests), textwrap.dedent(solution), guard_returns=guard)
    assert (result.status, result.reward) == (Status.OK, 1.0), (result.info, result.error)
