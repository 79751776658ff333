"""Floating-point work of an op, counted from its types: one definition for the cost model
and for what `inspect-neff` reports.

- dot_general: 2 x (result elements) x (contracted elements per result element);
- convolution: 2 x (result elements) x (kernel input features x kernel window);
- elementwise ops: one per result element; reduce, reduce_window: one per input element
  (per window element for reduce_window); sort: n log2 n comparisons per sorted row;
- data movement (reshape, transpose, slice, broadcast, constant, collectives...): zero.
"""

from __future__ import annotations

import math

from nxcc.ir.core import Function, Module, Op
from nxcc.ir.opdef import OP_DEFS, get_opdef


def op_flops(op: Op) -> int:
    """FLOPs of one execution of `op` (its called computations are not counted)."""
    code = op.opcode
    if code == "dot_general":
        lhs = op.operands[0].type
        contracted = math.prod(lhs.shape[d] for d in op.attrs["lhs_contracting_dims"])
        return 2 * op.results[0].type.size * contracted
    if code == "convolution":
        rhs = op.operands[1].type
        window = math.prod(rhs.shape[d] for d in op.attrs["kernel_spatial_dims"])
        kin = rhs.shape[op.attrs["kernel_input_feature_dim"]]  # type: ignore[index]
        return 2 * op.results[0].type.size * kin * window
    if code == "reduce":
        n = len(op.operands) // 2
        return sum(v.type.size for v in op.operands[:n])
    if code == "reduce_window":
        n = len(op.operands) // 2
        window = math.prod(op.attrs["window_dimensions"])  # type: ignore[arg-type]
        return sum(r.type.size for r in op.results[:n]) * window
    if code == "sort":
        t = op.operands[0].type
        if t.size == 0:
            return 0
        row = t.shape[op.attrs["dimension"]]  # type: ignore[index]
        return int(t.size * max(math.log2(max(row, 1)), 1))
    if code in OP_DEFS and get_opdef(code).elementwise and code not in ("copy", "convert"):
        return sum(r.type.size for r in op.results)
    return 0


def function_flops(fn: Function) -> int:
    """FLOPs of one run of `fn`'s body (ops only; called computations are not counted)."""
    return sum(op_flops(op) for op in fn.body)


def module_flops(module: Module) -> int:
    """FLOPs of one execution of the entry function."""
    return function_flops(module.entry_function)
