"""Float comparisons that hold on every machine: the tolerance comes from the dtype and the
size of the reduction, not from what one processor happened to print.

Two float32 computations of the same sum in different orders (micro-batches, BLAS kernels
picked for the processor, thread counts) differ by up to about ``n * eps`` of the sum's
scale for ``n`` terms; a real bug (a micro-batch lost, a wrong normaliser) moves results by
a share of their scale, orders of magnitude more.

``terms`` counts the float32 terms summed along the longest chain behind one result:
first-order rounding errors add along a chain, so a logprob's is the vocabulary of its
log-sum-exp, and a gradient element's is the sum over tokens plus, in each layer, the sums
over the hidden width, the MLP width and the attended positions (``backward_terms``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

FLOAT32_EPS = float(np.finfo(np.float32).eps)  # 1.19e-7


def float32_tolerance(
    reference: Any, terms: int, *, scale: float | None = None, probabilistic: bool = False
) -> float:
    """The absolute tolerance for a float32 result made of ``terms`` summed terms, scaled by
    the largest magnitude in ``reference`` (a safety factor of 4).

    ``scale``: the size of the summed terms where it differs from the result's, as for a
    sum of terms of both signs (pass the sum of their magnitudes). ``probabilistic``: grow
    with ``sqrt(terms)`` instead of ``terms``: rounding errors of a long reduction behave
    like a random walk (Higham and Mary, SIAM J. Sci. Comput. 41(5), 2019), and the worst
    case is vacuous past about 10,000 terms (for a 49,152-token vocabulary it accepts 0.2
    on a logprob of 8)."""
    if scale is None:
        scale = float(np.max(np.abs(np.asarray(reference, dtype=np.float64)))) or 1.0
    return 4 * (math.sqrt(terms) if probabilistic else terms) * FLOAT32_EPS * scale


def assert_float32_close(
    actual: Any,
    expected: Any,
    terms: int,
    *,
    scale: float | None = None,
    probabilistic: bool = False,
    err_msg: str = "",
) -> None:
    """``actual`` equals ``expected`` up to float32 reordering of ``terms`` summed terms
    (``scale`` and ``probabilistic`` as for ``float32_tolerance``)."""
    got = np.asarray(actual, dtype=np.float64)
    want = np.asarray(expected, dtype=np.float64)
    tolerance = float32_tolerance(want, terms, scale=scale, probabilistic=probabilistic)
    np.testing.assert_allclose(got, want, rtol=0, atol=tolerance, err_msg=err_msg)


def backward_terms(tokens: int, longest: int, config: Any) -> int:
    """``terms`` behind one LoRA gradient element of a transformers decoder (``config``
    with ``num_hidden_layers``, ``hidden_size``, ``intermediate_size``): the sum over the
    ``tokens`` of the batch, and along each token's chain, every layer's sums over the
    hidden width, the MLP width and up to ``longest`` attended positions."""
    widths = int(config.hidden_size) + int(config.intermediate_size) + longest
    return tokens + int(config.num_hidden_layers) * widths
