"""custom-call for targets with a known meaning, and topk.

Known targets: the sharding and placement annotations (identity on one device:
Sharding, SPMDFullToShardShape, SPMDShardToFullShape, MoveToHost, MoveToDevice,
LayoutConstraint, annotate_device_placement and Shardy's xla.sdy.* markers) and TopK. Any
other target is an error naming it (NCC_EHCA005), as neuronx-cc reports. A Sharding
custom-call's ``sharding=`` is kept as a constraint on its operand (for mesh-partition)."""

from __future__ import annotations

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.context import InstrContext, Tree
from nxcc.compiler.hlo.registry import converts
from nxcc.ir import ops
from nxcc.ir.computations import compare_computation
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType

IDENTITY_TARGETS = frozenset({
    "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "MoveToHost",
    "MoveToDevice", "LayoutConstraint", "annotate_device_placement",
    "xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape", "xla.sdy.FuncResultSharding",
    "xla.sdy.Sharding", "xla_ffi_python_cpu_callback_identity",
})
KNOWN_TARGETS = IDENTITY_TARGETS | {"TopK"}


@converts("custom-call")
def lower_custom_call(cx: InstrContext) -> Tree:
    target = cx.attr("custom_call_target")
    if target in IDENTITY_TARGETS:
        if len(cx.args) != 1:
            raise cx.error(f"expected one operand for custom-call target '{target}', found "
                           f"{len(cx.args)}", at=cx.instr.operands_offset)
        constraint = cx.instr.attrs.get("sharding")
        if target == "Sharding" and constraint is not None and isinstance(cx.args[0], Value):
            cx.lowering.constraints.append((cx.args[0], constraint))
        return cx.args[0]
    if target == "TopK":
        return top_k(cx, _k_of(cx), largest=True)
    raise cx.attr_error("custom_call_target",
                        f"expected a custom-call target the compiler knows, found "
                        f"'{target}' (known: {', '.join(sorted(KNOWN_TARGETS))})",
                        E.UNKNOWN_CUSTOM_CALL)


def _k_of(cx: InstrContext) -> int:
    shape = cx.instr.shape
    first = shape.elements[0] if shape.is_tuple else shape  # type: ignore[union-attr]
    return cx.ir_type(first).shape[-1]


@converts("topk")
def lower_topk(cx: InstrContext) -> Tree:
    return top_k(cx, cx.attr_as("k", int), cx.attr_as("largest", bool, True))


def top_k(cx: InstrContext, k: int, largest: bool) -> Tree:
    """(values, s32 indices) of the k largest (or smallest) along the last dimension:
    a stable sort of (x, iota) then a slice."""
    cx.operand_count(1)
    x = cx.value(0)
    rank = x.type.rank
    if rank == 0 or not 0 <= k <= x.type.shape[-1]:
        raise cx.error(f"expected 0 <= k <= {x.type.shape[-1] if rank else 0}, found {k}")
    idx = cx.emit1(ops.iota, [], {"dtype": DType.S32, "shape": x.type.shape,
                                "dimension": rank - 1})
    comparator = compare_computation(cx.lowering.module, "GT" if largest else "LT",
                                     [x.type.dtype, DType.S32])
    values, indices = cx.emit(ops.sort, [x, idx], {"dimension": rank - 1, "is_stable": True,
                                                 "comparator": comparator})
    limit = (*x.type.shape[:-1], k)
    sl = {"start_indices": (0,) * rank, "limit_indices": limit, "strides": (1,) * rank}
    return (cx.emit1(ops.slice, [values], sl), cx.emit1(ops.slice, [indices], sl))
