"""A positive per-channel scaling before a convolution folded into its weights.

A pre-activation network (DenseNet) runs a batch norm and a ReLU on the input of each
convolution: a `fused_elementwise` computing ``max(x * s + t, 0)`` with s, t constants
varying along the channels at most (after `affine.py`), read by the convolution alone.
Where every element of s is positive and finite, ``max(x * s + t, 0) = s * max(x + t / s,
0)``, and a convolution is linear in each input channel: ``conv(s * y, w) = conv(y, w *
s)``, w scaled along its input features. `fold_input_scales` rewrites the program to
``max(x + t / s, 0)`` (or ``x + t / s``, or nothing at all: the convolution then reads x)
and the weights to ``w * s``, both new constants computed in float64 and rounded once, as
`epilogue.py` folds a batch norm's scale on the output side: one numpy pass less over the
block for every such input, results that differ by the reassociation's rounding.

Only for a convolution of one group and one batch group whose weights are a float
constant, and a program that is exactly that chain (its steps in that order, the maximum
against a zero constant, any operand order); the zero padding a convolution adds is the
same before and after (0 / s is 0).
"""

from __future__ import annotations

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import Dense, attr_of
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.fused_program import FusedProgram, format_program, parse_program
from nxcc.ir.rewrite import constant_value, use_counts
from nxcc.passes.ir_edit import make_op, replace_ops

_CONVOLUTIONS = (ops.convolution, ops.fused_convolution)


def fold_input_scales(module: Module, fn: Function) -> bool:
    """Fold the input scaling of every convolution of `fn` that has one into its weights
    (see the module doc), in place; True if any was."""
    uses = use_counts(fn)
    replaced: dict[int, list[Op]] = {}
    dropped: set[int] = set()
    for conv in fn.body:
        if conv.opdef not in _CONVOLUTIONS:
            continue
        pre = conv.operands[0].owner
        if (pre is None or pre.opdef is not ops.fused_elementwise or id(pre) in replaced
                or uses.get(id(conv.operands[0])) != 1):
            continue
        made = _folded(module, conv, pre)
        if made is None:
            continue
        weights, program_ops, new_conv = made
        replaced[id(pre)] = program_ops if program_ops else []
        if not program_ops:
            dropped.add(id(pre))
        replaced[id(conv)] = [weights, new_conv]
    if not replaced:
        return False
    replace_ops(fn, {k: v for k, v in replaced.items() if v}, dropped)
    return True


def _folded(module: Module, conv: Op, pre: Op) -> tuple[Op, list[Op], Op] | None:
    """(the scaled weights' constant, the op replacing `pre` (none when the convolution
    reads x itself), the new convolution), or None when `pre` is not such a chain."""
    a = conv.attrs
    if attr_of(a, "feature_group_count", int) != 1 or attr_of(a, "batch_group_count", int) != 1:
        return None
    weights = constant_value(conv.operands[1])
    if weights is None or not weights.type.dtype.is_float:
        return None
    program = parse_program(str(pre.attrs["program"]))
    chain = _chain(program, pre.operands)
    if chain is None:
        return None
    x_index, scale_index, shift_index, zero_index = chain
    feature = attr_of(a, "input_feature_dim", int)
    scale = _along(pre.operands[scale_index], program.operand_dims[scale_index], feature)
    if scale is None or not np.all(np.isfinite(scale)) or not np.all(scale > 0):
        return None
    shift = (None if shift_index is None else
             _along(pre.operands[shift_index], program.operand_dims[shift_index], feature))
    if shift_index is not None and shift is None:
        return None
    x = pre.operands[x_index]
    if x.type != pre.result.type:
        return None
    dtype = weights.type.dtype
    factor_shape = [1] * weights.type.rank
    factor_shape[attr_of(a, "kernel_input_feature_dim", int)] = -1 if scale.size > 1 else 1
    scaled = np.multiply(weights.array.astype(np.float64), scale.reshape(factor_shape))
    folded = make_op(module, ops.constant, [], {"value": Dense.of(scaled, dtype)})
    folded.result.name = f"{conv.operands[1].name or 'w'}_scaled"
    operands = [*pre.operands]
    steps: list[tuple[str, str, list[tuple[bool, int]]]] = []
    made: list[Op] = [folded]
    offset_dims: tuple[int, ...] = ()
    if shift is not None:
        offset = shift / scale
        offset_dims = (feature,) if offset.size > 1 else ()
        made.append(make_op(module, ops.constant, [], {
            "value": Dense.of(offset if offset.size > 1 else offset.reshape(()), dtype)}))
        operands.append(made[-1].result)
        steps.append((ops.add.name, "", [(True, x_index), (True, len(operands) - 1)]))
    if zero_index is not None:
        steps.append((ops.maximum.name, "", [(False, len(steps) - 1) if steps
                                            else (True, x_index), (True, zero_index)]))
    if steps:
        used = sorted({i for _, _, args in steps for is_op, i in args if is_op})
        renumber = {old: new for new, old in enumerate(used)}
        dims = [program.operand_dims[i] if i < len(program.operand_dims) else offset_dims
                for i in used]
        steps = [(opcode, q, [(is_op, renumber[i] if is_op else i) for is_op, i in args])
                 for opcode, q, args in steps]
        attrs = ops.fused_elementwise.check_attrs(
            {"program": format_program(dims, steps), "shape": pre.result.type.shape})
        new_pre = Op(ops.fused_elementwise, [operands[i] for i in used],
                     [pre.result.type], attrs, [pre.result.name])
        new_pre.result.sharding = pre.result.sharding
        lhs = new_pre.result
        pre_ops = [*made[1:], new_pre]
    else:
        lhs = x
        pre_ops = []
    new_conv = Op(conv.opdef, [lhs, folded.result, *conv.operands[2:]],
                  [conv.result.type], conv.attrs, [conv.result.name])
    new_conv.result.sharding = conv.result.sharding
    return folded, pre_ops, new_conv


def _chain(program: FusedProgram, operands: list[Value]
           ) -> tuple[int, int, int | None, int | None] | None:
    """(x, s, t or None, zero or None): the operand indices of a program that is exactly
    ``multiply(x, s)``, then optionally ``add(_, t)``, then optionally ``maximum(_, 0)``,
    s and t constants, 0 a zero constant (any operand order); None otherwise."""
    steps = list(program.steps)
    if not steps or steps[0].opdef is not ops.multiply or not all(
            is_op for is_op, _ in steps[0].args):
        return None
    first = [i for _, i in steps[0].args]
    scales = [i for i in first if constant_value(operands[i]) is not None]
    if len(scales) != 1 or first.count(scales[0]) != 1:
        return None
    x_index, scale_index = next(i for i in first if i != scales[0]), scales[0]
    shift_index = zero_index = None
    rest = steps[1:]
    if rest and rest[0].opdef is ops.add:
        shift_index = _other(rest[0].args, 0, operands)
        if shift_index is None:
            return None
        rest = rest[1:]
    if rest and rest[0].opdef is ops.maximum:
        zero_index = _other(rest[0].args, len(steps) - len(rest) - 1, operands)
        value = constant_value(operands[zero_index]) if zero_index is not None else None
        if value is None or not value.is_splat or float(value.splat_value) != 0.0:
            return None
        rest = rest[1:]
    return None if rest else (x_index, scale_index, shift_index, zero_index)


def _other(args: tuple[tuple[bool, int], ...], previous: int, operands: list[Value]
           ) -> int | None:
    """The constant operand of a binary step whose other argument is step `previous`."""
    indices = [i for is_op, i in args if is_op]
    if len(args) != 2 or (False, previous) not in args or len(indices) != 1:
        return None
    return indices[0] if constant_value(operands[indices[0]]) is not None else None


def _along(v: Value, dims: tuple[int, ...], feature: int) -> np.ndarray | None:
    """A constant operand's values as a float64 vector over the channels (one element when
    it is one value), when it varies along the channel dimension `feature` at most."""
    value = constant_value(v)
    if value is None:
        return None
    if value.is_splat:
        return np.asarray(value.splat_value, np.float64).reshape(1)
    varying = [d for d, n in zip(dims, value.type.shape, strict=True) if n != 1]
    if varying != [feature]:
        return None
    return value.array.astype(np.float64).reshape(-1)
