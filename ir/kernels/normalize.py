"""Kernels of the fused row ops `softmax` and `layer_norm` (made by `passes/fusion`).

Each runs the steps of the op chain it replaces, in the same order and precision (a row
reduction as the reduce kernel does it, `exp` and `rsqrt` by their own kernels, rounded
once from float64), but in the result buffer and one row-statistics array instead of a
full-size array per op.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue
from nxcc.ir.kernels.base import KernelContext, get_kernel, kernel

_NATIVE = (np.dtype(np.float32), np.dtype(np.float64))
_F32 = np.dtype(np.float32)
_FLOOR = np.float32(-700.0)  # exp(-700) is 1e-304 in float64, 0 once rounded to float32


@kernel(ops.softmax)
def softmax(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
            attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    x, out = args[0], outs[0]
    axis = int(attrs["dimension"])  # type: ignore[call-overload]
    with np.errstate(all="ignore"):
        row = np.maximum.reduce(x, axis=axis, keepdims=True)
        np.subtract(x, row, out=out)
        if out.dtype == _F32:
            # a masked score (-1e4, float32's min, -inf) takes numpy's slow float64 exp path
            # (4x on GPT-2's causal softmax); below -700 float32's result is 0 either way
            np.maximum(out, _FLOOR, out=out)  # NaN stays NaN
        if out.dtype in _NATIVE:  # what the exp kernel does for these, without its checks
            np.exp(out, out=out, dtype=np.float64, casting="unsafe")
        else:
            get_kernel(ops.exp)([out], [out], {}, ctx)  # elementwise: in place is safe
        np.add.reduce(out, axis=axis, keepdims=True, out=row)
        np.divide(out, row, out=out)


@kernel(ops.layer_norm)
def layer_norm(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
               attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    x, out = args[0], outs[0]
    axis = int(attrs["dimension"])  # type: ignore[call-overload]
    n = out.dtype.type(x.shape[axis])
    eps = out.dtype.type(float(attrs["epsilon"]))  # type: ignore[arg-type]
    with np.errstate(all="ignore"):
        row = np.add.reduce(x, axis=axis, keepdims=True)
        row /= n
        np.subtract(x, row, out=out)
        np.add.reduce(np.square(out), axis=axis, keepdims=True, out=row)
        row /= n
        row += eps
        get_kernel(ops.rsqrt)([row], [row], {}, ctx)
        out *= row
