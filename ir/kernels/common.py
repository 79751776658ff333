"""Helpers shared by the kernels: compute dtypes, storing into outs, padding, windows.

Low-precision floats (f16, bf16) are computed in float32 and rounded back once when stored
(`store`), as XLA's CPU backend does. Integer arithmetic wraps modulo 2**bits.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import ml_dtypes
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

_ML_FLOATS = tuple(np.dtype(t) for t in (
    ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz,
    ml_dtypes.float8_e5m2, ml_dtypes.float8_e5m2fnuz, ml_dtypes.float8_e8m0fnu,
    ml_dtypes.float4_e2m1fn))
_LOW_PRECISION = (np.dtype(np.float16), *_ML_FLOATS)
#: the dtypes numpy computes natively (no rounding through another type): ufuncs and BLAS
#: give a kernel's exact result on them with `out=` straight into the destination
NATIVE_FLOATS = frozenset(np.dtype(t) for t in (np.float32, np.float64))
NATIVE_NUMBERS = NATIVE_FLOATS | frozenset(np.dtype(t) for t in (np.int32, np.int64))
# Narrow integers (ml_dtypes int4...) are computed in the numpy integer of their signedness.
_NARROW_INTS = {np.dtype(ml_dtypes.int4): np.dtype(np.int8),
                np.dtype(ml_dtypes.int2): np.dtype(np.int8),
                np.dtype(ml_dtypes.uint4): np.dtype(np.uint8),
                np.dtype(ml_dtypes.uint2): np.dtype(np.uint8)}


def is_float(dtype: np.dtype) -> bool:
    """True for every floating-point dtype, bfloat16 and the ml_dtypes f8/f4 types included."""
    return dtype.kind == "f" or dtype in _ML_FLOATS


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype arithmetic on `dtype` values is done in: float32 for f16, bf16 and the
    8- and 4-bit floats, int8/uint8 for the 4- and 2-bit integers, else itself."""
    dtype = np.dtype(dtype)
    if dtype in _LOW_PRECISION:
        return np.dtype(np.float32)
    return _NARROW_INTS.get(dtype, dtype)


def as_compute(x: np.ndarray) -> np.ndarray:
    """`x` in its compute dtype (no copy when it already is)."""
    return np.asarray(x).astype(compute_dtype(x.dtype), copy=False)


def store(out: np.ndarray, value: np.ndarray | np.generic | float | int | bool) -> None:
    """Write `value` (broadcast to out's shape, cast unsafely: wraps/rounds, overflow to inf
    silently) into `out`."""
    with np.errstate(all="ignore"):
        np.copyto(out, value, casting="unsafe")


def uint_dtype(dtype: np.dtype) -> np.dtype:
    """The unsigned integer dtype of the same width as `dtype`."""
    return np.dtype(f"u{np.dtype(dtype).itemsize}")


def int_dtype(dtype: np.dtype) -> np.dtype:
    """The signed integer dtype of the same width as `dtype`."""
    return np.dtype(f"i{np.dtype(dtype).itemsize}")


def pad_array(x: np.ndarray, value: np.ndarray | np.generic | float | int,
              low: Sequence[int], high: Sequence[int], interior: Sequence[int]) -> np.ndarray:
    """HLO pad: `interior[d]` copies of `value` between elements, then `low`/`high` on each
    side; negative low/high crop. Returns a new array of x's dtype."""
    shape = []
    for n, lo, hi, it in zip(x.shape, low, high, interior, strict=True):
        shape.append(max(lo + hi + n + max(n - 1, 0) * it, 0))
    out = np.empty(shape, dtype=x.dtype)
    store(out, value)
    dst, src = [], []
    for n, size, lo, it in zip(x.shape, shape, low, interior, strict=True):
        step = it + 1
        first = 0 if lo >= 0 else (-lo + step - 1) // step  # first source landing at >= 0
        last = min(n - 1, (size - 1 - lo) // step)  # last source landing below size
        if last < first:
            return out
        dst.append(slice(lo + first * step, lo + last * step + 1, step))
        src.append(slice(first, last + 1))
    out[tuple(dst)] = x[tuple(src)]
    return out


def window_output_size(size: int, window: int, stride: int, dilation: int) -> int:
    """Number of strided positions of a `dilation`-dilated window over `size` elements."""
    span = (window - 1) * dilation + 1
    return 0 if size < span else (size - span) // stride + 1


def windows(x: np.ndarray, window: Sequence[int], strides: Sequence[int],
            dilations: Sequence[int]) -> np.ndarray:
    """A read-only view of shape (*positions, *window) of the strided, dilated windows of
    `x` over all its dimensions (no copy). Empty when a window does not fit."""
    spans = tuple((w - 1) * d + 1 for w, d in zip(window, dilations, strict=True))
    counts = tuple(window_output_size(n, w, s, d) for n, w, s, d in
                   zip(x.shape, window, strides, dilations, strict=True))
    if any(c == 0 for c in counts) or any(w == 0 for w in window):
        return np.empty((*counts, *window), dtype=x.dtype)
    view = sliding_window_view(x, spans)
    index = tuple(slice(None, None, s) for s in strides) + tuple(
        slice(None, None, d) for d in dilations)
    return view[index]


def move_to_end(x: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    """`x` with `axes` moved (in order) to the end, flattened into one last axis."""
    axes = list(axes)
    keep = [d for d in range(x.ndim) if d not in axes]
    moved = x.transpose(keep + axes)
    return moved.reshape(*(x.shape[d] for d in keep), math.prod(x.shape[d] for d in axes))


def bound_call(fn: Callable[..., object], *args: object) -> Callable[[], object]:
    """`fn(*args)` as a zero-argument callable, for a numpy function whose output array is
    its last positional argument (a ufunc's `out` after its inputs, np.dot's third, a
    reduce's fourth): a partial with positional arguments only. One with `out=` merges its
    keywords into a new dict on every call: 0.44 against 0.27 us for a ufunc on 128 float32
    elements. Except np.maximum and np.minimum, whose positional out numpy 2.4 deprecates
    (a warning on every call): they get `out=`."""
    if fn is np.maximum or fn is np.minimum:
        return functools.partial(fn, *args[:-1], out=args[-1])
    return functools.partial(fn, *args)


def in_order(calls: Sequence[Callable[[], object]]) -> Callable[[], None]:
    """One callable making `calls` in order (a kernel planned at load as a list of bound
    numpy calls)."""
    def run() -> None:
        for call in calls:
            call()

    return run
