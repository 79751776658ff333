"""Unary elementwise kernels (abs, negate, sign, exp ... erf, not, popcnt, clz): the numpy
functions the op definitions in `nxcc.ir.ops.elementwise` carry, and `unary_kernel`, which
makes a kernel of one (`nxcc.ir.kernels.from_defs` registers them).

Transcendental functions (exp ... erf, rsqrt) are evaluated in float64 and rounded once into
the out, so f32/f16/bf16 results are correctly rounded in practice and the same on every CPU
(numpy's float32 SIMD kernels are up to 2 ulps off, differently per platform). Exact ops
(abs, floor, round...) compute in the compute dtype (f32 for f16/bf16). Integer ops wrap
(abs(INT_MIN) == INT_MIN). sign keeps -0.0 and NaN; round_afz rounds halves away from zero,
round_even to even.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from nxcc.ir.attributes import AttrValue
from nxcc.ir.kernels.base import KernelContext
from nxcc.ir.kernels.common import as_compute, compute_dtype, is_float, store
from nxcc.ir.kernels.erf import erf as erf64

UnaryFn = Callable[[np.ndarray], np.ndarray]


def logistic(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) without overflow: uses exp(-|x|) <= 1."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def round_afz(x: np.ndarray) -> np.ndarray:
    """Round half away from zero: exact, since x - trunc(x) is exact in binary floats."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def erf(x: np.ndarray) -> np.ndarray:
    return erf64(x)


def rsqrt(x: np.ndarray) -> np.ndarray:
    return np.reciprocal(np.sqrt(x))


def sign(x: np.ndarray) -> np.ndarray:
    if is_float(x.dtype):
        return np.where(x == 0, x, np.sign(x))  # keeps -0.0; sign(NaN) is NaN
    return np.sign(x)


def logical_not(x: np.ndarray) -> np.ndarray:
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


def unary_kernel(fn: UnaryFn, precise: bool):
    def run(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
            attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
        """outs[0] = fn(args[0]), computed in float64 (`precise`) or the compute dtype,
        rounded once."""
        x = np.asarray(args[0], dtype=np.float64) if precise else as_compute(args[0])
        with np.errstate(all="ignore"):
            if isinstance(fn, np.ufunc) and compute_dtype(outs[0].dtype) == outs[0].dtype \
                    and x.dtype == outs[0].dtype:
                fn(x, out=outs[0])
            else:
                store(outs[0], fn(x))

    return run
