"""Vectorized error functions (numpy has none): `erf` in float64, accurate to a few ulps,
and `erf_float32` at about float32 cost (a grid table and a short Taylor expansion).

For |x| < 2.5 the everywhere-positive series
    erf(x) = 2/sqrt(pi) * exp(-x^2) * sum_n (2 x^2)^n x / (2n+1)!!
(no cancellation; 40 terms give < 1e-15 relative error); beyond it erfc by its continued
fraction erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), evaluated
bottom-up from a fixed depth of 40 (< 1e-14 relative error of erfc for x >= 2.5), and
erf = 1 - erfc. Both are a fixed number of whole-array passes.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable

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


# float32 erf: a Taylor expansion about the nearest point of a fine grid, in float64.
_SCALE = 256.0  # grid points per unit
_LIMIT = 4.0  # erf(a) rounds to 1.0 in float32 for a >= 3.92
_LAST = int(_LIMIT * _SCALE)  # the last grid point's index
_DEGREE = 3
_BLOCK = 1 << 14  # elements per block: the float64 scratch arrays stay in the L2 cache
_SMALL = 1 << 11  # up to this many elements: one gather of whole table rows
_F32 = np.dtype(np.float32)


def _taylor_table() -> np.ndarray:
    """[degree + 1, points]: row k holds erf^(k)(p) / k! at every grid point p (k = 0 by
    the float64 series; erf^(k+1)(p) = (-1)^k H_k(p) erf'(p), Hermite by recurrence)."""
    p = np.arange(_LAST + 1) / _SCALE
    slope = _TWO_OVER_SQRT_PI * np.exp(-p * p)
    rows = [erf(p)]
    h_prev, h = np.zeros_like(p), np.ones_like(p)
    for k in range(_DEGREE):
        rows.append((-1) ** k * h * slope / math.factorial(k + 1))
        h_prev, h = h, 2 * p * h - 2 * k * h_prev
    return np.ascontiguousarray(np.stack(rows))


_ROWS = _taylor_table()
_BY_POINT = np.ascontiguousarray(_ROWS.T)  # [points, degree + 1]


def erf_float32(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """erf of a float32 array at about float32 cost: into `out` (float32, x's shape) or a
    new array, which is returned. NaN -> NaN, +-inf -> +-1, -0.0 -> -0.0.

    With a = min(|x|, 4) and p the nearest multiple of 1/256, in float64: erf(a) = sum over
    k <= 3 of erf^(k)(p) / k! (a - p)^k (the table holds the coefficients; |a - p| <=
    1/512 and a - p is exact), the sign copied from x, rounded once to float32. About 20
    float64 passes over blocks of 16384 elements (4 of them gathers from an 8 KB table),
    against 160 for the float64 series; under 2,048 elements one gather of whole table
    rows replaces the four. Only + and x, in a fixed order: the same bits on every CPU,
    and for every array size.

    Measured error (tests/ir/kernels/test_unary.py checks a sparser sweep): over every 11th
    float32 in [2^-26, 4.5] (21,448,146 values), against the float64 series `erf`: at most
    0.5001 ulp of the float32 result; 113 values (5e-6) not correctly rounded (one ulp off,
    the exact value within 0.0001 ulp of a rounding boundary). Beyond 4.5 the result is
    exactly +-1 (as is the correctly rounded value); erf is odd and so is this.
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    if out is not None and not out.flags.c_contiguous:
        np.copyto(out, erf_float32(x))
        return out
    if out is None:
        out = np.empty(x.shape, np.float32)
    flat, flat_out = x.reshape(-1), out.reshape(-1)
    scratch = _scratch()
    with np.errstate(invalid="ignore"):  # a NaN's index (see _erf_block)
        for start in range(0, flat.size, _BLOCK):
            block = slice(start, start + _BLOCK)
            _erf_block(flat[block], flat_out[block], scratch)
    return out


class ErfBuffers:
    """The float64 and index arrays `_erf_block` works in, for blocks of `n` elements
    (shorter blocks use their leading part)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.d = np.empty(n)
        self.r = np.empty(n)
        self.index = np.empty(n, np.intp)
        self.coefficients = np.empty((_DEGREE + 1, n)) if n > _SMALL else None
        self.acc = np.empty(n)
        self.limit = np.full(n, _LIMIT)


def prepare_erf_float32(x: np.ndarray, out: np.ndarray) -> Callable[[], None] | None:
    """A callable computing `erf_float32(x, out)` (the same bits) for these fixed arrays
    with its own buffers, made now, or None unless both are C-contiguous float32 arrays
    of one shape and at most 2,048 elements. The planned call skips what `erf_float32`
    does per call (layout checks, views, the error state), a third of its time on the
    128-element GELU of examples/mlp.onnx."""
    if (x.dtype != _F32 or out.dtype != _F32 or x.shape != out.shape or x.size > _SMALL
            or not x.flags.c_contiguous or not out.flags.c_contiguous):
        return None
    return functools.partial(_erf_block, x.reshape(-1), out.reshape(-1), ErfBuffers(x.size))


_local = threading.local()


def _scratch() -> ErfBuffers:
    """This thread's block-sized buffers, made once per thread: fresh 128 KiB temporaries
    per block cost page faults (glibc maps or trims them), and were most of the kernel's
    time."""
    found = getattr(_local, "scratch", None)
    if found is None:
        found = _local.scratch = ErfBuffers(_BLOCK)
    return found


def _erf_block(x: np.ndarray, out: np.ndarray, s: ErfBuffers) -> None:
    """out = erf(x) for one flat block of at most `s.n` elements, every step into `s`.

    a = min(|x|, 4) (against an array of 4.0: numpy's minimum with a scalar is 4x slower);
    p = rint(256 a) / 256 and a - p (exact: both hold few bits at nearby scales); the
    coefficients of p's row gathered (four gathers, or under _SMALL elements one gather of
    whole rows) in "clip" mode, which also gives a NaN's garbage index some row (its
    offset is NaN, so its result is NaN whichever row it gets); Horner in float64; rounded
    once to float32, then the sign of x copied (rounding to nearest is odd)."""
    n = x.size
    if n == s.n:
        a, r, index, acc, limit = s.d, s.r, s.index, s.acc, s.limit
    else:
        a, r, index, acc, limit = s.d[:n], s.r[:n], s.index[:n], s.acc[:n], s.limit[:n]
    np.abs(x, out=a, dtype=np.float64)
    np.minimum(a, limit, out=a)
    np.multiply(a, _SCALE, out=r)
    np.rint(r, out=r)
    np.copyto(index, r, casting="unsafe")
    r *= 1.0 / _SCALE
    np.subtract(a, r, out=a)
    if n <= _SMALL:
        rows = _BY_POINT.take(index, axis=0, mode="clip")
        coefficients = [rows[:, k] for k in range(_DEGREE + 1)]
    else:
        assert s.coefficients is not None
        coefficients = [row.take(index, out=c[:n], mode="clip")
                        for row, c in zip(_ROWS, s.coefficients, strict=True)]
    np.multiply(coefficients[_DEGREE], a, out=acc)
    for k in range(_DEGREE - 1, 0, -1):
        acc += coefficients[k]
        acc *= a
    acc += coefficients[0]
    np.copyto(out, acc, casting="unsafe")
    np.copysign(out, x, out=out)
