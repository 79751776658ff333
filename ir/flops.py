"""Floating-point work of an op, counted from its types: one definition for the cost model
and for what `inspect-neff` reports.

- dot_general: 2 x (result elements) x (contracted elements per result element);
- convolution: 2 x (result elements) x (kernel input features x kernel window);
- elementwise ops: one per result element; reduce, reduce_window: one per input element
  (per window element for reduce_window); sort: n log2 n comparisons per sorted row;
- data movement (reshape, transpose, slice, broadcast, constant, collectives...): zero,
  registered explicitly.

Counts are registered against op definitions in `FLOPS` (``@flops(ops.dot_general)``); an
elementwise op (``elementwise=True`` in its definition) counts one per result element unless
it registers its own count.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from nxcc.ir import ops
from nxcc.ir.attributes import attr_ints, attr_of
from nxcc.ir.core import Function, Module, Op
from nxcc.ir.fused_program import parse_program
from nxcc.ir.opdef import all_opdefs
from nxcc.ir.ops.collective import ASYNC_OPS
from nxcc.ir.registry import OpTable

#: FLOPs of one execution of an op, from its types and attributes.
FlopCount = Callable[[Op], int]

#: op definition -> its FLOP count; every op has one (a test checks).
FLOPS: OpTable[FlopCount] = OpTable("FLOP count")
flops = FLOPS.register


@flops(ops.dot_general)
def _dot_general(op: Op) -> int:
    lhs = op.operands[0].type
    contracted = math.prod(lhs.shape[d] for d in attr_ints(op.attrs, "lhs_contracting_dims"))
    return 2 * op.results[0].type.size * contracted


@flops(ops.convolution)
def convolution_flops(op: Op) -> int:
    """The convolution's products (of a `fused_convolution` too, without its epilogue)."""
    rhs = op.operands[1].type
    window = math.prod(rhs.shape[d] for d in attr_ints(op.attrs, "kernel_spatial_dims"))
    kin = rhs.shape[attr_of(op.attrs, "kernel_input_feature_dim", int)]
    return 2 * op.results[0].type.size * kin * window


@flops(ops.reduce)
def _reduce(op: Op) -> int:
    n = len(op.operands) // 2
    return sum(v.type.size for v in op.operands[:n])


@flops(ops.reduce_window)
def _reduce_window(op: Op) -> int:
    n = len(op.operands) // 2
    window = math.prod(attr_ints(op.attrs, "window_dimensions"))
    return sum(r.type.size for r in op.results[:n]) * window


@flops(ops.sort)
def _sort(op: Op) -> int:
    t = op.operands[0].type
    if t.size == 0:
        return 0
    row = t.shape[attr_of(op.attrs, "dimension", int)]
    return int(t.size * max(math.log2(max(row, 1)), 1))


@flops(
    # data movement and conversion
    ops.copy, ops.convert, ops.bitcast_convert, ops.broadcast_in_dim, ops.reshape,
    ops.transpose, ops.slice, ops.pad, ops.concatenate, ops.reverse, ops.iota, ops.constant,
    ops.dynamic_slice, ops.dynamic_update_slice, ops.gather, ops.scatter,
    ops.select_and_scatter,
    # control flow (called computations are counted where they are run) and identities
    ops.call, ops.while_, ops.conditional, ops.partition_id, ops.replica_id,
    ops.optimization_barrier, ops.tp_copy,
    # collectives: communication, counted by the cost model as bytes
    ops.all_reduce, ops.all_gather, ops.reduce_scatter, ops.all_to_all,
    ops.collective_permute, ops.send, ops.send_done, ops.recv, ops.recv_done,
    *ASYNC_OPS,
    # random bits: integer work, not floating point
    ops.random_bits,
)
def no_flops(op: Op) -> int:
    return 0


@flops(ops.fused_elementwise)
def program_flops(op: Op) -> int:
    """One FLOP per result element per step that is not a conversion (a fused op's
    elementwise program: of a `fused_convolution`, its epilogue)."""
    from_program = parse_program(str(op.attrs["program"])).steps
    return op.result.type.size * sum(s.opdef is not ops.convert for s in from_program)


@flops(ops.fused_convolution)
def _fused_convolution(op: Op) -> int:
    """The convolution's and its epilogue's."""
    return convolution_flops(op) + program_flops(op)


@flops(ops.softmax, ops.layer_norm)
def _row_normalize(op: Op) -> int:
    """About five FLOPs per element (two reductions, a difference, a scaling, exp or a
    square)."""
    return 5 * op.result.type.size


def per_element(op: Op) -> int:
    """One FLOP per result element: every elementwise op without a count of its own."""
    return sum(r.type.size for r in op.results)


for _def in all_opdefs():
    if _def.elementwise and _def not in FLOPS:
        FLOPS.add(_def, per_element)


def op_flops(op: Op) -> int:
    """FLOPs of one execution of `op` (its called computations are not counted)."""
    return FLOPS[op.opcode](op)


def function_flops(fn: Function) -> int:
    """FLOPs of one run of `fn`'s body (ops only; called computations are not counted)."""
    return sum(op_flops(op) for op in fn.body)


def module_flops(module: Module) -> int:
    """FLOPs of one execution of the entry function."""
    return function_flops(module.entry_function)
