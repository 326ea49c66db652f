"""Float comparisons that hold on every machine: the tolerance comes from the dtype and the
size of the reduction, not from what one processor happened to print.

Two float32 computations of the same sum in different orders (micro-batches, BLAS kernels
picked for the processor, thread counts) differ by up to about ``n * eps`` of the sum's
scale for ``n`` terms; a real bug (a micro-batch lost, a wrong normaliser) moves results by
a share of their scale, orders of magnitude more."""

from __future__ import annotations

from typing import Any

import numpy as np

FLOAT32_EPS = float(np.finfo(np.float32).eps)  # 1.19e-7


def float32_tolerance(reference: Any, terms: int) -> float:
    """The absolute tolerance for a float32 result made of ``terms`` summed terms, scaled by
    the largest magnitude in ``reference`` (a safety factor of 4)."""
    scale = float(np.max(np.abs(np.asarray(reference, dtype=np.float64)))) or 1.0
    return 4 * terms * FLOAT32_EPS * scale


def assert_float32_close(actual: Any, expected: Any, terms: int) -> None:
    """``actual`` equals ``expected`` up to float32 reordering of ``terms`` summed terms."""
    got = np.asarray(actual, dtype=np.float64)
    want = np.asarray(expected, dtype=np.float64)
    np.testing.assert_allclose(got, want, rtol=0, atol=float32_tolerance(want, terms))
