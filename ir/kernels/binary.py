"""Binary elementwise kernels: arithmetic, min/max, atan2, logic and shifts.

Operands have the same element type (their shapes may differ only by numpy broadcasting,
which happens when a scalar computation is applied to whole arrays). Floats compute in the
compute dtype; integers wrap, divide truncates toward zero and remainder takes the
dividend's sign (see `backend.kernels.integer`). On pred, add is or and multiply is and.
Float power and atan2 are evaluated in float64 and rounded once (like the transcendental
unary ops); the other float ops are exact in the compute dtype.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from nxcc.ir.attributes import AttrValue
from nxcc.ir.kernels import integer
from nxcc.ir.kernels.base import KernelContext
from nxcc.ir.kernels.common import as_compute, is_float, store

BinaryFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


class ByKind:
    """A binary function computed by `float_fn` on floats and `int_fn` on integers (the
    parts stay visible: `from_defs.exact_ufunc` reads them)."""

    def __init__(self, float_fn: BinaryFn, int_fn: BinaryFn) -> None:
        self.float_fn = float_fn
        self.int_fn = int_fn

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.float_fn(a, b) if is_float(a.dtype) else self.int_fn(a, b)


def by_kind(float_fn: BinaryFn, int_fn: BinaryFn) -> ByKind:
    return ByKind(float_fn, int_fn)


def shifter(kind: str) -> BinaryFn:
    return lambda a, b: integer.shift(a, b, kind)


def binary_kernel(fn: BinaryFn, precise: bool):
    def run(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
            attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
        """outs[0] = fn(args[0], args[1]) in the compute dtype (float64 for floats when
        `precise`), rounded once."""
        a, b = as_compute(args[0]), as_compute(args[1])
        if precise and is_float(a.dtype):
            a, b = a.astype(np.float64), b.astype(np.float64)
        out = outs[0]
        with np.errstate(all="ignore"):
            if isinstance(fn, np.ufunc) and a.dtype == b.dtype == out.dtype:
                fn(a, b, out=out)
            else:
                store(out, fn(a, b))

    return run
