"""Vectorized error functions (numpy has none): `erf` in float64, accurate to a few ulps,
and `erf_float32` in float32 arithmetic (a grid table and a cubic Taylor step).

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


# float32 erf in float32 arithmetic: a cubic Taylor step about the nearest point of a grid.
_SCALE = 256.0  # grid points per unit
_LIMIT = 4.0  # erf(a) rounds to 1.0 in float32 for a >= 3.92
_HALF = int(_LIMIT * _SCALE)  # grid points on each side of 0
# elements per block: each numpy call is long enough (8-30 us) that two threads computing
# erf side by side seldom wait for each other's GIL (at 16,384, two threads took longer
# than one: 2.3 ms against 1.9 ms for 393,216 elements), and the scratch arrays stay in
# the L2 and L3 caches
_BLOCK = 1 << 16
_SMALL = 1 << 11  # up to this many elements: one gather of whole table rows
_F32 = np.dtype(np.float32)
# x * 256 + _MAGIC rounds x * 256 to an integer k (to nearest even) held in the low bits of
# the float32; those bits less _MAGIC_BITS are k's table row, 0 .. 2 * _HALF
_MAGIC = np.float32(1.5 * 2**23)
_MAGIC_BITS = int(_MAGIC.view(np.int32)) - _HALF
# The constants as 0-d arrays: numpy multiplies by a 0-d float32 array as by a Python
# float (the same float32 value), but without converting a Python scalar on every call.
_SCALE_0D = np.array(_SCALE, np.float32)
_MAGIC_0D = np.array(_MAGIC, np.float32)
_MINUS_STEP_0D = np.array(-1.0 / _SCALE, np.float32)
_MAGIC_BITS_0D = np.array(_MAGIC_BITS, np.intp)
# not a Python int: numpy holds the GIL through a ufunc loop with a Python scalar operand,
# so two threads computing erf would wait on each other for the whole loop
_MAGIC_BITS_I32 = np.array(_MAGIC_BITS, np.int32)
_ONE_0D = np.array(1.0, np.float32)
_TWO_THIRDS_0D = np.array(2.0 / 3.0, np.float32)
_ONE_THIRD_0D = np.array(1.0 / 3.0, np.float32)


def _higher_terms(minus_p: np.ndarray, slope_less_one: np.ndarray, slope: np.ndarray,
                  c2: np.ndarray, c3: np.ndarray) -> None:
    """The Taylor coefficients erf''(p)/2 = -p erf'(p) into c2 and erf'''(p)/6 =
    ((2/3) p^2 - 1/3) erf'(p) into c3 (and erf'(p) into slope), from -p and erf'(p) - 1,
    in float32 and in this order. The table's columns are made by this very function, so a
    block that computes them gets the table's bits."""
    np.add(slope_less_one, _ONE_0D, out=slope)
    np.multiply(minus_p, minus_p, out=c3)
    np.multiply(c3, _TWO_THIRDS_0D, out=c3)
    np.subtract(c3, _ONE_THIRD_0D, out=c3)
    c3 *= slope
    np.multiply(minus_p, slope, out=c2)


def _grid_table() -> np.ndarray:
    """[6, points] float32 for the grid points p = k / 256, k = -1024 .. 1024: erf(p) as a
    float32 head and the float32 rounding of what the head misses (at p = 0 both are -0.0,
    so that erf(-0.0) = -0.0 and erf(+0.0) = +0.0); the slope less one, erf'(p) - 1
    (d + (slope - 1) d is nearer the exact product than a rounded slope times d); and the
    two higher coefficients (`_higher_terms`); p itself. From the float64 series."""
    p = np.arange(-_HALF, _HALF + 1) / _SCALE
    exact = erf(p)
    head = exact.astype(np.float32)
    tail = (exact - head).astype(np.float32)
    slope_less_one = (_TWO_OVER_SQRT_PI * np.exp(-p * p) - 1.0).astype(np.float32)
    head[_HALF] = tail[_HALF] = -0.0
    c2, c3, slope = (np.empty_like(head) for _ in range(3))
    _higher_terms((-p).astype(np.float32), slope_less_one, slope, c2, c3)
    return np.ascontiguousarray(np.stack([head, tail, slope_less_one, c2, c3,
                                          p.astype(np.float32)]))


_TABLE = _grid_table()
_BY_POINT = np.ascontiguousarray(_TABLE.T)  # [points, 6]


def erf_float32(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """erf of a float32 array at float32 cost: into `out` (float32, x's shape) or a new
    array, which is returned. NaN -> NaN, +-inf -> +-1, -0.0 -> -0.0.

    With a = x clamped to [-4, 4], p = k / 256 its nearest grid point, d = a - p (|d| <=
    1/512, exact), s = erf'(p) - 1 and head + tail = erf(p) from a 2,049-row table, all in
    float32:

        erf(a) = head + ((((c3 d + c2) d + s) d + tail) + d)

    (the cubic Taylor expansion, its linear term split as d + s d; c2 = erf''(p) / 2 =
    -p erf'(p) and c3 = erf'''(p) / 6 = ((2/3) p^2 - 1/3) erf'(p) are computed from s and
    p in blocks, with the bits of the table's own columns). About 25 float32 passes over
    blocks of 16,384 elements, 3 of them gathers (under 2,048 elements one gather of whole
    rows). Only +, -, x and exact ops, in a fixed order: the same bits on every CPU and for
    every array size.

    Error, measured over every positive float32 below 4.5 (1,083,179,007 values) against
    the float64 series `erf`: at most 0.7982 ulp of the float32 result, 0.254 ulp on
    average, correctly rounded on 94.4% of them; from 0.1 up at most 0.5182 ulp. The result
    is exactly +-1 from 3.92 on, as is the correctly rounded value; erf is odd and so is
    this, bit for bit.
    (tests/ir/kernels/test_unary.py checks a sparser sweep.)
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    if out is not None and not out.flags.c_contiguous:
        np.copyto(out, erf_float32(x))
        return out
    if out is None:
        out = np.empty(x.shape, np.float32)
    flat, flat_out = x.reshape(-1), out.reshape(-1)
    scratch = _scratch()
    with np.errstate(invalid="ignore"):  # NaN inputs
        for start in range(0, flat.size, _BLOCK):
            block = slice(start, start + _BLOCK)
            _erf_block(flat[block], flat_out[block], scratch)
    return out


class ErfBuffers:
    """The arrays `_erf_block` works in, for blocks of `n` elements (shorter blocks use
    their leading part)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.d = np.empty(n, np.float32)
        self.k = np.empty(n, np.float32)
        self.k_bits = self.k.view(np.int32)
        self.acc = np.empty(n, np.float32)
        self.slope = np.empty(n, np.float32)
        self.c2 = np.empty(n, np.float32)
        self.c3 = np.empty(n, np.float32)
        self.row = np.empty(n, np.int32)
        self.index = np.empty(n, np.intp)
        self.last_row = np.full(n, 2 * _HALF, np.int32)
        self.first_row = np.zeros(n, np.int32)
        self.gathered = np.empty((3, n), np.float32) if n > _SMALL else None
        self.rows = np.empty((n, _BY_POINT.shape[1]), np.float32) if n <= _SMALL else None
        self.columns = None if self.rows is None else [c for c in self.rows.T]
        self.high = np.full(n, _LIMIT, np.float32)
        self.low = np.full(n, -_LIMIT, np.float32)


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
    """This thread's block-sized buffers, made once per thread: fresh temporaries per block
    cost page faults (glibc maps or trims them), and were most of the kernel's time."""
    found = getattr(_local, "scratch", None)
    if found is None:
        found = _local.scratch = ErfBuffers(_BLOCK)
    return found


def _erf_block(x: np.ndarray, out: np.ndarray, s: ErfBuffers) -> None:
    """out = erf(x) for one flat block of at most `s.n` elements, every step into `s` or
    `out` (only the first step reads x, so `out` may be `x`).

    a = x clamped against arrays of +-4 (numpy's minimum with a scalar is 4x slower; NaN
    stays NaN); k = 256 a rounded by the magic number and its row read from its bits, then
    clamped to the table (only a NaN's garbage row is outside it: its d is NaN, so its
    result is NaN whichever row it gets); -p and d = a - p; the table's columns gathered in
    "wrap" mode, which never wraps a row in the table and is faster than "clip" (a row far
    outside would make it loop); then the expansion of `erf_float32`, innermost first.
    A small block gathers whole rows (with p and the higher coefficients, the bits the
    large path computes) in "clip" mode instead, which clamps the same way, in fewer
    calls, into row buffers made once."""
    n = x.size
    if n == s.n:
        d, k, acc, row, index, high, low = s.d, s.k, s.acc, s.row, s.index, s.high, s.low
        first_row, last_row = s.first_row, s.last_row
    else:
        d, k, acc, row, index, high, low = (s.d[:n], s.k[:n], s.acc[:n], s.row[:n],
                                            s.index[:n], s.high[:n], s.low[:n])
        first_row, last_row = s.first_row[:n], s.last_row[:n]
    np.minimum(x, high, out=d)  # (numpy 2.4 deprecates their positional out)
    np.maximum(d, low, out=d)  # a
    np.multiply(d, _SCALE_0D, k)
    np.add(k, _MAGIC_0D, k)
    if n <= _SMALL:  # fewer calls: the clamping done by "clip", p gathered with the row
        np.subtract(s.k_bits if n == s.n else k.view(np.int32), _MAGIC_BITS_0D, index)
        if s.rows is not None and n == s.n:
            rows, columns = s.rows, s.columns
        else:
            rows = np.empty((n, _BY_POINT.shape[1]), np.float32)
            columns = list(rows.T)
        _BY_POINT.take(index, axis=0, out=rows, mode="clip")
        head, tail, slope_less_one, c2, c3, p = columns  # type: ignore[misc]
        d -= p  # d = a - p, exact
    else:
        np.subtract(k.view(np.int32), _MAGIC_BITS_I32, out=row)
        np.minimum(row, last_row, out=row)
        np.maximum(row, first_row, out=row)
        np.copyto(index, row)
        np.subtract(k, _MAGIC_0D, out=k)
        np.multiply(k, _MINUS_STEP_0D, out=k)  # -p
        d += k  # d = a - p, exact
        assert s.gathered is not None
        head, tail, slope_less_one = (column.take(index, out=g[:n], mode="wrap")
                                      for column, g in zip(_TABLE[:3], s.gathered, strict=True))
        c2, c3 = s.c2[:n], s.c3[:n]
        _higher_terms(k, slope_less_one, s.slope[:n], c2, c3)
    np.multiply(c3, d, acc)
    acc += c2
    acc *= d
    acc += slope_less_one
    acc *= d
    acc += tail
    acc += d
    np.add(acc, head, out)
