"""A vectorized float64 error function, accurate to a few ulps (numpy has no erf).

For |x| < 2.5 the everywhere-positive series
    erf(x) = 2/sqrt(pi) * exp(-x^2) * sum_n (2 x^2)^n x / (2n+1)!!
(no cancellation; 40 terms give < 1e-15 relative error); beyond it erfc by its continued
fraction erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), evaluated
bottom-up from a fixed depth of 40 (< 1e-14 relative error of erfc for x >= 2.5), and
erf = 1 - erfc. Both are a fixed number of whole-array passes.
"""

from __future__ import annotations

import math

import numpy as np

_SERIES_TERMS = 40
_FRACTION_DEPTH = 40
_SPLIT = 2.5
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _series_coefficients() -> tuple[float, ...]:
    coef, c = [], 1.0
    for n in range(_SERIES_TERMS):
        coef.append(c)
        c *= 2.0 / (2 * n + 3)
    return tuple(reversed(coef))


_COEFFICIENTS = _series_coefficients()


def _erf_series(x: np.ndarray) -> np.ndarray:
    t = x * x
    acc = np.zeros_like(x)
    for c in _COEFFICIENTS:
        acc *= t
        acc += c
    return _TWO_OVER_SQRT_PI * np.exp(-t) * x * acc


def _erfc_fraction(x: np.ndarray) -> np.ndarray:
    """erfc(x) for x >= _SPLIT (inf gives 0)."""
    f = x.copy()
    for k in range(_FRACTION_DEPTH, 0, -1):
        f = x + (0.5 * k) / f
    return np.exp(-x * x) / (math.sqrt(math.pi) * f)


def erf(x: np.ndarray) -> np.ndarray:
    """erf of every element of `x`, computed in float64; a new float64 array. NaN -> NaN."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    with np.errstate(all="ignore"):
        far = np.abs(x) >= _SPLIT
        near = ~far  # NaN lands here and stays NaN
        out[near] = _erf_series(x[near])
        xf = x[far]
        out[far] = np.copysign(1.0 - _erfc_fraction(np.abs(xf)), xf)
    return out
