"""The other elementwise kernels: compare, select, clamp, is_finite.

compare follows IEEE (NaN is unequal to everything, including itself). select takes a
scalar or full pred; clamp(min, x, max) = min(max(x, min), max) with scalar or full bounds.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue
from nxcc.ir.kernels.base import KernelContext, kernel
from nxcc.ir.kernels.common import NATIVE_FLOATS, as_compute, store
from nxcc.ir.kernels.plan import Step, kernel_only, plan
from nxcc.ir.kernels.scratch_pool import ScratchPool

COMPARE_UFUNCS: dict[str, np.ufunc] = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "LT": np.less,
    "LE": np.less_equal,
    "GT": np.greater,
    "GE": np.greater_equal,
}


@kernel(ops.compare)
def compare(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
            attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """outs[0] = args[0] <direction> args[1] (pred)."""
    ufunc = COMPARE_UFUNCS[str(attrs["direction"])]
    with np.errstate(all="ignore"):
        ufunc(as_compute(args[0]), as_compute(args[1]), out=outs[0])


@plan(ops.compare)
def compare_plan(args: Sequence[np.ndarray], out: np.ndarray, attrs: Mapping[str, AttrValue],
                 ctx: KernelContext, constant: Sequence[bool], pool: ScratchPool
                 ) -> Step | None:
    """The kernel's ufunc call on two floats of one native dtype and shape into a pred."""
    dtype = args[0].dtype
    if dtype not in NATIVE_FLOATS or out.dtype != np.bool_ or not all(
            a.dtype == dtype and a.shape == out.shape for a in args):
        return None
    return functools.partial(COMPARE_UFUNCS[str(attrs["direction"])], *args, out=out)


@kernel(ops.select)
def select(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
           attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """outs[0] = pred ? on_true : on_false, pred scalar or elementwise."""
    pred, on_true, on_false = args
    out = outs[0]
    if pred.ndim == 0 and out.shape == on_true.shape == on_false.shape:
        store(out, on_true if bool(pred) else on_false)
        return
    store(out, on_false)
    np.copyto(out, on_true, casting="unsafe", where=np.asarray(pred, dtype=bool))


@kernel(ops.clamp)
def clamp(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
          attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """outs[0] = minimum(maximum(x, lo), hi); NaN propagates."""
    lo, x, hi = (as_compute(a) for a in args)
    store(outs[0], np.minimum(np.maximum(x, lo), hi))


@kernel(ops.is_finite)
def is_finite(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
              attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """outs[0] = x is neither infinite nor NaN."""
    np.isfinite(as_compute(args[0]), out=outs[0])


kernel_only(ops.select, ops.clamp, ops.is_finite)
