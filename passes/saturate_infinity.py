"""saturate-infinity: a float that overflows becomes the largest finite value instead of inf.

For `--enable-saturate-infinity`. The results of `dot_general` and `convolution` are clamped
to [-max, max] of their type, and so is the operand of every `convert` to a float type with
a smaller range (the casts auto-cast introduces among them), so a value too large for the
narrow type becomes its largest finite value rather than inf:

    %y = dot_general(%a, %b) : f16[4,8]
      -> %y0 = dot_general(%a, %b) : f16[4,8]
         %y  = clamp(%lo, %y0, %hi)            (%lo, %hi: f16 constants -65504, 65504)

NaN stays NaN. For types without an infinity (f8e4m3fn), where an overflowing convert would
give NaN, the clamp gives the largest finite value too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import ml_dtypes
import numpy as np

from nxcc.ir import ops
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.passes.ir_edit import make_op, scalar_constant, substitute_results

CLAMPED_RESULTS = frozenset({ops.dot_general, ops.convolution})


def float_max(dtype: DType) -> float:
    """The largest finite value of a float type."""
    np_type = dtype.numpy
    info = np.finfo(np_type) if np_type.kind == "f" else ml_dtypes.finfo(np_type)
    return float(info.max)


@dataclass(frozen=True)
class SaturateInfinity:
    """Clamps contraction results and narrowing float converts to the finite range."""

    name: ClassVar[str] = "saturate-infinity"

    def run(self, module: Module) -> bool:
        changed = False
        for fn in module.functions.values():
            changed |= _saturate(module, fn)
        return changed


def _clamp(module: Module, body: list[Op], v: Value, limit: float) -> Value:
    """`v` clamped to [-limit, limit] (ops appended to `body`)."""
    dtype = v.type.dtype
    lo = scalar_constant(module, -limit, dtype)
    hi = scalar_constant(module, limit, dtype)
    clamp = make_op(module, ops.clamp, [lo.result, v, hi.result])
    body.extend((lo, hi, clamp))
    return clamp.result


def _narrowing(op: Op) -> float | None:
    """The target's max when `op` converts a float to a float of smaller range."""
    if op.opdef is not ops.convert:
        return None
    src, dst = op.operands[0].type.dtype, op.result.type.dtype
    if not (src.is_float and dst.is_float):
        return None
    limit = float_max(dst)
    return limit if limit < float_max(src) else None


def _saturate(module: Module, fn: Function) -> bool:
    body: list[Op] = []
    subst: dict[int, Value] = {}
    for op in fn.body:
        op.operands = [subst.get(id(v), v) for v in op.operands]
        limit = _narrowing(op)
        if limit is not None:
            op.operands = [_clamp(module, body, op.operands[0], limit)]
        body.append(op)
        if op.opdef in CLAMPED_RESULTS and op.result.type.dtype.is_float:
            out = _clamp(module, body, op.result, float_max(op.result.type.dtype))
            subst[id(op.result)] = out
    changed = len(body) != len(fn.body)
    fn.body = body
    substitute_results(fn, subst)
    return changed
