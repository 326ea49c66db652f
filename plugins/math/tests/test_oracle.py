"""Oracle test: tasks from a third-party procedural suite (reasoning-gym), made by our
``reasoning-gym:NAME`` task sets, its own scorer as the judge. The right answer, boxed and in
plain text, must be paid; no answer that the suite scores below 1 may be paid. The generator
is seeded, so the same few hundred tasks come every run."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
import reasoning_gym

from rl_verifier import Completion, Status
from rl_verifier.testing import load_task_source
from rl_verifier_math import MathVerifier
from rl_verifier_math.reasoning_gym_tasks import GENERATORS, reasoning_gym_tasks
from rl_verifier_math.reasoning_gym_tasks import SEED as TASKSET_SEED

SEED = 27
PER_DATASET = 16
PLAIN = [
    "The answer is {}.",
    "So {}.",
    "Adding it up.\n#### {}",
    "{}",
    "Therefore, the result is {}.",
]
Entry = dict[str, Any]


def off_by_one(text: str) -> list[str]:
    return [str(int(text) + 1), str(int(text) - 1), str(-int(text) or 7)]


def in_base(value: int, base: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    sign, value, out = "-" if value < 0 else "", abs(value), ""
    while True:
        value, digit = divmod(value, base)
        out = digits[digit] + out
        if not value:
            return sign + out


def hexadecimal(entry: Entry) -> list[str]:
    value = int(entry["answer"], 0)
    return [hex(value + 1), hex(value - 1), hex(value ^ 0x10), hex(-value), "0x0", f"0b{value:b}1"]


def base_digits(entry: Entry) -> list[str]:
    base, value = entry["metadata"]["target_base"], entry["metadata"]["decimal_value"]
    return [in_base(value + 1, base), in_base(value * base, base), in_base(value - 1, base)]


def fraction(entry: Entry) -> list[str]:
    meta = entry["metadata"]
    p, q = meta["simplified_numerator"], meta["simplified_denominator"]
    return [f"{meta['numerator']}/{meta['denominator']}", f"{q}/{p}", f"{p + 1}/{q}", f"{p}"]


def complex_number(entry: Entry) -> list[str]:
    real, imag = entry["metadata"]["result"]

    def written(a: float, b: float) -> str:
        return f"{a} {'-' if b < 0 else '+'} {abs(b)}i"

    return [written(real + 1, imag), written(real, -imag - 1), written(imag, real), f"{real}"]


def scientific(entry: Entry) -> list[str]:
    value = float(entry["answer"])
    return [repr(value * 10), repr(value * 1.5), repr(-value - 1), repr(value + 1)]


def factorization(entry: Entry) -> list[str]:
    factors = entry["metadata"]["factors"]
    product = 1
    for f in factors:
        product *= f
    wrong = [str(product), " × ".join(map(str, [*factors, 2])), f"{product + 1}"]
    if len(factors) > 1:
        wrong.append(" × ".join(map(str, factors[1:])))
    return wrong


def roots(entry: Entry) -> list[str]:
    values = [float(v) for v in entry["answer"].split(",")]
    wrong = [", ".join(str(v + 1) for v in values), ", ".join(str(v) for v in [*values, 9.5])]
    if len(values) > 1:
        wrong.append(", ".join(str(v) for v in values[1:]))
    return wrong


WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def calendar(entry: Entry) -> list[str]:
    answer = entry["answer"]
    if answer in WEEKDAYS:
        return [*[d for d in WEEKDAYS if d != answer][:3], f"{answer}1", answer[::-1]]
    if answer in ("Yes", "No"):
        return ["No" if answer == "Yes" else "Yes", f"{answer}s", "Maybe"]
    return off_by_one(answer)


def duration(entry: Entry) -> list[str]:
    answer = entry["answer"]
    if ":" not in answer:
        return [f"{int(answer.split()[0]) + 1} days"]
    head, _, last = answer.rpartition(":")
    wrong = [f"{head}:{(int(last[:2]) + 1) % 60:02d}{last[2:]}", answer.replace(":", ".", 1)]
    return [*wrong, answer.split(":", 1)[1]]


def decimal(entry: Entry) -> list[str]:
    value = float(entry["answer"])
    return [repr(round(value + 0.01, 6)), repr(-value - 1), repr(value * 2 + 1)]


def rational(entry: Entry) -> list[str]:
    p, _, q = entry["answer"].partition("/")
    if not q:
        return off_by_one(p)
    return [f"{q}/{p}", f"{int(p) + 1}/{q}", f"{p}/{int(q) + 1}"]


def integer(entry: Entry) -> list[str]:
    return off_by_one(entry["answer"])


Wrong = Callable[[Entry], list[str]]
DATASETS: dict[str, Wrong] = {
    "bitwise_arithmetic": hexadecimal,
    "base_conversion": base_digits,
    "fraction_simplification": fraction,
    "complex_arithmetic": complex_number,
    "power_function": scientific,
    "prime_factorization": factorization,
    "polynomial_equations": roots,
    "calendar_arithmetic": calendar,
    "time_intervals": duration,
    "decimal_arithmetic": decimal,
    "decimal_chain_sum": decimal,
    "dice": rational,
    "basic_arithmetic": integer,
    "chain_sum": integer,
    "products": integer,
    "gcd": integer,
    "lcm": integer,
    "count_bits": integer,
    "simple_equations": integer,
    "leg_counting": integer,
}


def graded() -> list[tuple[str, str, str, bool, float]]:
    """(dataset, form, completion, suite says right, our reward) for every candidate."""
    verifier, rows = MathVerifier(), []
    rng = random.Random(SEED)
    for name, wrong in DATASETS.items():
        dataset = reasoning_gym.create_dataset(name, seed=SEED, size=PER_DATASET)
        for item in reasoning_gym_tasks(name, seed=SEED, size=PER_DATASET):
            entry = dataset[item.metadata["index"]]
            answer = entry["answer"].strip("$")
            candidates = [("boxed", answer), *[("wrong", w) for w in wrong(entry) if w != answer]]
            for kind, text in candidates:
                right = dataset.score_answer(text, entry) == 1.0
                forms = [f"So the result is $\\boxed{{{text}}}$."]
                forms.append(rng.choice(PLAIN).format(text))
                for form, completion in zip(("boxed", "plain"), forms, strict=True):
                    score = verifier.verify(
                        item, Completion(task_id=item.id, completion=completion)
                    )
                    assert score.status in (Status.OK, Status.INVALID), (completion, score)
                    paid = score.reward if score.status is Status.OK else 0.0
                    label = form if kind != "wrong" else f"wrong {form}"
                    rows.append((name, label, completion, right, paid))
    return rows


@pytest.fixture(scope="module")
def rows() -> list[tuple[str, str, str, bool, float]]:
    return graded()


def test_no_answer_the_suite_scores_wrong_is_paid(rows: list[tuple[Any, ...]]) -> None:
    paid = [(name, c) for name, label, c, right, reward in rows if not right and reward > 0]
    assert not paid, paid
    wrong = Counter(name for name, label, _, right, _ in rows if label.startswith("wrong"))
    assert len(wrong) == len(DATASETS) and min(wrong.values()) >= PER_DATASET, wrong


@pytest.mark.parametrize(("form", "share"), [("boxed", 0.99), ("plain", 0.95)])
def test_right_answers_are_paid(rows: list[tuple[Any, ...]], form: str, share: float) -> None:
    right = [(name, c, reward) for name, label, c, ok, reward in rows if label == form]
    assert all(ok for _, label, _, ok, _ in rows if label == form)  # the suite agrees
    missed = [(name, c) for name, c, reward in right if reward != 1.0]
    assert len(right) >= 300
    assert len(missed) <= (1 - share) * len(right), missed


def test_every_offered_generator_is_checked_here() -> None:
    assert sorted(DATASETS) == sorted(GENERATORS)


@pytest.mark.parametrize("name", ["gcd", "fraction_simplification", "base_conversion"])
def test_the_task_sets_are_the_suites_entries_split_by_question(name: str) -> None:
    """``taskset:reasoning-gym:NAME`` is the suite's seeded entries, in its order, each
    question once; ``:train`` and ``:test`` share no question and stay put across loads."""
    everything = list(load_task_source(f"taskset:reasoning-gym:{name}").values())
    dataset = reasoning_gym.create_dataset(name, seed=TASKSET_SEED, size=len(everything))
    indices = [t.metadata["index"] for t in everything]
    assert indices == sorted(indices) and len(everything) >= 200
    for task in everything:
        entry = dataset[task.metadata["index"]]
        assert task.prompt.startswith(entry["question"]) and task.verifier == "math"
        assert dataset.score_answer(task.reference["answer"], entry) == 1.0
    assert len({t.prompt for t in everything}) == len(everything)
    train = load_task_source(f"taskset:reasoning-gym:{name}:train")
    test = load_task_source(f"taskset:reasoning-gym:{name}:test")
    assert not set(train) & set(test) and len(train) + len(test) == len(everything)
    assert 0.1 < len(test) / len(everything) < 0.3
    assert list(load_task_source(f"taskset:reasoning-gym:{name}:test")) == list(test)
