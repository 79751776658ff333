"""Integer arithmetic with HLO's (C-like, wrapping) semantics, vectorized.

- `divide` truncates toward zero; x / 0 is -1 (all bits set, so the maximum for unsigned
  types); INT_MIN / -1 is INT_MIN (wraps).
- `remainder` has the sign of the dividend (C fmod); x % 0 is x; INT_MIN % -1 is 0.
- `power` is exact, wrapping exponentiation by squaring; a negative exponent gives 0 except
  for base 1 (1) and base -1 (+-1 by the exponent's parity).
- shifts: counts are read as unsigned; a count >= the bit width gives 0 for shift_left and
  shift_right_logical, and the sign fill (0 or -1) for shift_right_arithmetic.
- `popcnt` and `clz` count the bits of the two's-complement pattern.
"""

from __future__ import annotations

import numpy as np

from nxcc.ir.kernels.common import int_dtype, uint_dtype


def _pair(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    return a, b


def _safe_divisor(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(b with 0 and the INT_MIN/-1 overflow case replaced by 1, mask of b == 0)."""
    zero = b == 0
    bad = zero
    if a.dtype.kind == "i":
        bad = zero | ((a == np.iinfo(a.dtype).min) & (b == -1))
    return np.where(bad, np.ones((), b.dtype), b), zero


def _trunc_quotient(a: np.ndarray, safe: np.ndarray) -> np.ndarray:
    q = np.floor_divide(a, safe)
    if a.dtype.kind == "i":
        inexact = np.remainder(a, safe) != 0
        q = q + (inexact & ((a < 0) != (safe < 0))).astype(a.dtype)
    return np.asarray(q, dtype=a.dtype)


def divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b truncated toward zero (see module doc for the corner cases)."""
    a, b = _pair(a, b)
    with np.errstate(all="ignore"):
        safe, zero = _safe_divisor(a, b)
        q = _trunc_quotient(a, safe)
        return np.where(zero, np.array(-1).astype(a.dtype), q)


def remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a - b * trunc(a / b); a where b == 0."""
    a, b = _pair(a, b)
    with np.errstate(all="ignore"):
        safe, zero = _safe_divisor(a, b)
        r = np.asarray(a - _trunc_quotient(a, safe) * safe, dtype=a.dtype)
        return np.where(zero, a, r)


def power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a ** b with wrapping, by squaring over the exponent's bits (<= bit-width passes)."""
    a, b = _pair(a, b)
    dtype = a.dtype
    one = np.ones((), dtype)
    with np.errstate(all="ignore"):
        negative = b < 0 if dtype.kind == "i" else np.zeros(b.shape, bool)
        e = np.where(negative, np.zeros((), dtype), b).astype(uint_dtype(dtype))
        result = np.ones(a.shape, dtype)
        base = a.copy()
        while e.any():
            result = np.where((e & 1).astype(bool), result * base, result).astype(dtype)
            e = e >> 1
            base = (base * base).astype(dtype)
        if negative.any():
            odd = (b & 1).astype(bool)
            minus_one = np.array(-1).astype(dtype)
            special = np.where(a == one, one,
                               np.where(a == minus_one, np.where(odd, minus_one, one),
                                        np.zeros((), dtype)))
            result = np.where(negative, special, result)
    return np.asarray(result, dtype=dtype)


def shift(a: np.ndarray, b: np.ndarray, kind: str) -> np.ndarray:
    """`kind` is 'left', 'right_logical' or 'right_arithmetic'."""
    a, b = _pair(a, b)
    bits = a.dtype.itemsize * 8
    ua = a.view(uint_dtype(a.dtype))
    count = b.view(uint_dtype(b.dtype))
    valid = count < bits
    with np.errstate(all="ignore"):
        if kind == "right_arithmetic":
            sa = a.view(int_dtype(a.dtype))
            cnt = np.where(valid, count, bits - 1).astype(sa.dtype)
            return np.right_shift(sa, cnt).view(a.dtype)
        cnt = np.where(valid, count, 0).astype(ua.dtype)
        if kind == "left":
            r = np.left_shift(ua, cnt)
        elif kind == "right_logical":
            r = np.right_shift(ua, cnt)
        else:
            raise ValueError(f"unknown shift kind {kind}")
        return np.where(valid, r, np.zeros((), ua.dtype)).view(a.dtype)


def popcnt(a: np.ndarray) -> np.ndarray:
    """Number of set bits of each element's bit pattern (as uint8)."""
    a = np.asarray(a)
    return np.bitwise_count(a.view(uint_dtype(a.dtype)))


def clz(a: np.ndarray) -> np.ndarray:
    """Number of leading zero bits of each element's bit pattern."""
    a = np.asarray(a)
    bits = a.dtype.itemsize * 8
    v = a.view(uint_dtype(a.dtype)).copy()
    step = 1
    while step < bits:
        v |= v >> step
        step *= 2
    return bits - np.bitwise_count(v).astype(np.int64)
