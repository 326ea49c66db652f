"""Estimators: unbiased pass@k (Chen et al. 2021), majority vote, and 95% t-intervals."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean, stdev

LEVEL = 0.95


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of ``k`` of ``n`` samples, ``c`` of them correct,
    drawn without replacement, is correct: ``1 - C(n-c, k) / C(n, k)`` as a stable product."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    miss = 1.0
    for i in range(n - c + 1, n + 1):
        miss *= 1.0 - k / i
    return 1.0 - miss


def majority_correct(votes: Sequence[tuple[str, bool]]) -> bool | None:
    """Whether the most common answer of ``votes`` (answer, correct) is correct; a tie goes
    to the answer that reached the top count first. None without votes."""
    if not votes:
        return None
    counts = Counter(answer for answer, _ in votes)
    top = max(counts.values())
    seen: Counter[str] = Counter()
    for answer, correct in votes:
        seen[answer] += 1
        if seen[answer] == top and counts[answer] == top:
            return correct
    raise AssertionError("unreachable: some answer reaches the top count")


@dataclass(frozen=True)
class Interval:
    """A mean with its 95% two-sided t-interval over ``count`` values (None for 1 value)."""

    mean: float
    low: float | None
    high: float | None
    count: int

    def as_dict(self) -> dict[str, float | int | None]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "count": self.count}


def mean_interval(values: Sequence[float], level: float = LEVEL) -> Interval | None:
    """Student-t interval of the mean; None without values, no bounds with one value."""
    if not values:
        return None
    mean = fmean(values)
    if len(values) < 2:
        return Interval(mean, None, None, 1)
    half = t_quantile(0.5 + level / 2, len(values) - 1) * stdev(values) / math.sqrt(len(values))
    return Interval(mean, mean - half, mean + half, len(values))


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (bisection on the CDF)."""
    low, high = -1e3, 1e3
    for _ in range(200):
        middle = (low + high) / 2
        if t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def t_cdf(x: float, df: int) -> float:
    """Student's t CDF through the regularized incomplete beta function."""
    tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + x * x))
    return 1.0 - tail if x > 0 else tail


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta I_x(a, b), by its continued fraction (modified Lentz)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1) / (a + b + 2):  # the fraction converges fast only below this point
        return 1.0 - incomplete_beta(b, a, 1.0 - x)
    log_front = a * math.log(x) + b * math.log1p(-x) - math.log(a) - log_beta(a, b)
    return math.exp(log_front) * beta_fraction(a, b, x)


def log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction 1 / (1 + d1 / (1 + d2 / ...)) of I_x(a, b)."""
    tiny = 1e-300
    numerator, denominator = 1.0, 1.0 - (a + b) * x / (a + 1)
    denominator = 1.0 / (denominator if abs(denominator) > tiny else tiny)
    value = denominator
    for m in range(1, 500):
        for d in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            denominator = 1.0 + d * denominator
            denominator = 1.0 / (denominator if abs(denominator) > tiny else tiny)
            numerator = 1.0 + d / numerator
            numerator = numerator if abs(numerator) > tiny else tiny
            value *= numerator * denominator
        if abs(numerator * denominator - 1.0) < 1e-15:
            break
    return value
