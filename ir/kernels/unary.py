"""Unary elementwise kernels (abs, negate, sign, exp ... erf, not, popcnt, clz): the numpy
functions the op definitions in `nxcc.ir.ops.elementwise` carry, and `unary_kernel`, which
makes a kernel of one (`nxcc.ir.kernels.from_defs` registers them).

Transcendental functions (expm1 ... erf, rsqrt) are evaluated in float64 and rounded once
into the out, so f32/f16/bf16 results are correctly rounded in practice and the same on
every CPU. The ufuncs run with `dtype=float64` straight into the out: numpy casts in
buffered blocks, so there is no full-size float64 temporary and one pass (measured error
0.5 ulp: correctly rounded on every value of the tests' sweeps).

exp, log and tanh on float32 are the exception (`float32_native` in their definitions):
numpy's own float32 loops, at float32 cost (on 16,384 elements: exp 5.7 against 13.3 us
through float64, tanh 3.0 against 16.5, log 5.2 against 14.3). Their error, measured over
every finite float32 against the float64 function: exp at most 2.541 ulp, tanh 1.374, log
3.832 (correctly rounded on 93.6%, 98.5% and 96.3% of all floats; on normal(0, 3) inputs
61%, 68% and 82%). Their bits do not depend on the array's layout, length, offset or
stride (checked in the tests; the fused and softmax kernels rely on it), and are the same
on x86 machines with AVX2 and with AVX-512 (measured: numpy picks its kernel by the CPU; on
a CPU with neither, or on ARM, numpy's other kernels give other bits). numpy's float32
expm1, log1p, sinh and the like do depend on the layout (a negative stride takes another
kernel), so they stay in float64. f16/bf16 stay in float64 too (rounded once).

erf on float32 (and f16/bf16, computed in float32): numpy has no erf, and the float64
series costs about 17 whole passes, so `erf.erf_float32` computes it in float32 arithmetic
(a grid table and a cubic Taylor step; at most 0.80 ulp, the same bits on every CPU, see
there). logistic is 1 / (1 + exp(-x)) in float64 (0.5 ulp after rounding in the tests'
sweeps). Exact ops (abs, floor, round...) compute in the compute dtype (f32 for f16/bf16).
Integer ops wrap (abs(INT_MIN) == INT_MIN). sign keeps -0.0 and NaN; round_afz rounds
halves away from zero, round_even to even.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from nxcc.ir.attributes import AttrValue
from nxcc.ir.kernels.base import KernelContext
from nxcc.ir.kernels.common import as_compute, compute_dtype, is_float, store
from nxcc.ir.kernels.erf import erf as erf64
from nxcc.ir.kernels.erf import erf_float32

UnaryFn = Callable[[np.ndarray], np.ndarray]


def logistic(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) in float64 (a new float64 array); exp(-x) = inf for very negative x
    gives exactly 0, as it should."""
    e = np.array(x, dtype=np.float64)  # an array even when x is 0-d
    np.negative(e, out=e)
    np.exp(e, out=e)
    e += 1.0
    np.reciprocal(e, out=e)
    return e


def round_afz(x: np.ndarray) -> np.ndarray:
    """Round half away from zero: exact, since x - trunc(x) is exact in binary floats."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def erf(x: np.ndarray) -> np.ndarray:
    """float32 by the float32 polynomials, float64 by the float64 series."""
    return erf_float32(x) if x.dtype == np.float32 else erf64(x)


def rsqrt(x: np.ndarray) -> np.ndarray:
    r = np.array(x, dtype=np.float64)  # an array even when x is 0-d
    np.sqrt(r, out=r)
    np.reciprocal(r, out=r)
    return r


def sign(x: np.ndarray) -> np.ndarray:
    if is_float(x.dtype):
        return np.where(x == 0, x, np.sign(x))  # keeps -0.0; sign(NaN) is NaN
    return np.sign(x)


def logical_not(x: np.ndarray) -> np.ndarray:
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


def unary_kernel(fn: UnaryFn, precise: bool, float32_native: bool = False):
    def run(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
            attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
        """outs[0] = fn(args[0]), computed in float64 (`precise`; float32 by fn's own
        float32 loop when `float32_native`) or the compute dtype, rounded once."""
        x, out = as_compute(args[0]), outs[0]
        with np.errstate(all="ignore"):
            if not isinstance(fn, np.ufunc):
                store(out, fn(x))  # the function picks its own precision
            elif float32_native and x.dtype == out.dtype == np.float32:
                fn(x, out=out)
            elif precise and x.dtype.kind == "f":
                if x.dtype == out.dtype:
                    fn(x, out=out, dtype=np.float64, casting="unsafe")  # buffered, one pass
                else:
                    store(out, fn(x, dtype=np.float64))
            elif precise:
                store(out, fn(np.asarray(x, dtype=np.float64)))
            elif compute_dtype(out.dtype) == out.dtype and x.dtype == out.dtype:
                fn(x, out=out)
            else:
                store(out, fn(x))

    return run
