"""Epilogues: a convolution and the elementwise op that alone reads it become one op.

After the elementwise groups are fused (`elementwise.py`), a `convolution` whose result is
read by one op only, a `fused_elementwise` or a single elementwise op (the bias add and
ReLU after a convolution, a residual add), and read there as a whole (every dimension, not
broadcast) becomes a `fused_convolution`: the convolution's operands, then the epilogue's
other operands, and the epilogue's program with the convolution's result as its a0. The
kernel then finishes the product in place, while it is in cache, instead of a separate pass
over memory (`ir/kernels/fused_convolution.py`). Only when the epilogue keeps the
convolution's element type (its result is written where the product was), and never for a
value the function returns.

An epilogue that starts by multiplying the product by a constant varying along the output
features at most (a batch norm's scale), of a convolution whose weights are a float
constant, has that scale folded into the weights (a new constant, rounded once in their
type), as onnxruntime folds batch norms into convolutions; a scaling alone leaves a plain
convolution of the scaled weights. A positive scaling of a convolution's input by the
`fused_elementwise` that alone feeds it (a pre-activation batch norm and ReLU) is folded
into the weights likewise (`input_scale.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import Dense, attr_of
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.fused_program import StepText, after_first_step, format_program, parse_program
from nxcc.ir.rewrite import constant_value, use_counts
from nxcc.passes.dead_code_elimination import DeadCodeElimination
from nxcc.passes.fusion.elementwise import Group, fused_op, fusible, scalar_computation
from nxcc.passes.fusion.input_scale import fold_input_scales
from nxcc.passes.ir_edit import replace_ops


@dataclass(frozen=True)
class FuseEpilogues:
    """Fuses each convolution with the elementwise op that alone reads it (after `fuse`),
    and folds positive input scalings into the weights (`input_scale`)."""

    name: ClassVar[str] = "fuse-epilogue"

    def run(self, module: Module) -> bool:
        changed = False
        for fn in module.functions.values():
            if not scalar_computation(fn):
                changed |= fuse_epilogues(fn)
                changed |= fold_input_scales(module, fn)
        if changed:  # the broadcasts a single op's epilogue reads through
            DeadCodeElimination().run(module)
        return changed


def fuse_epilogues(fn: Function) -> bool:
    """Fuse each convolution of `fn` with its epilogue, in place; True if any was."""
    uses = use_counts(fn)  # a returned value counts a use: never read only by an epilogue
    position = {id(op): i for i, op in enumerate(fn.body)}
    replaced: dict[int, list[Op]] = {}  # id of an epilogue -> the ops replacing it
    dropped: set[int] = set()  # ids of the convolutions fused
    for op in fn.body:
        if op.opdef is not ops.fused_elementwise and not fusible(op):
            continue
        epilogue = op if op.opdef is ops.fused_elementwise else fused_op(
            Group(op, {id(op): op}), position)
        k = _product_operand(epilogue, uses)
        if k is None or id(epilogue.operands[k].owner) in dropped:
            continue
        conv = epilogue.operands[k].owner
        assert conv is not None
        replaced[id(op)] = _fused(conv, epilogue, k)
        dropped.add(id(conv))
    if not replaced:
        return False
    replace_ops(fn, replaced, dropped)
    return True


def _product_operand(epilogue: Op, uses: dict[int, int]) -> int | None:
    """The index of the epilogue's operand that is a convolution's result read only there,
    whole, of the epilogue's element type; None if there is none."""
    dims = parse_program(str(epilogue.attrs["program"])).operand_dims
    result = epilogue.result.type
    for k, v in enumerate(epilogue.operands):
        owner = v.owner
        if (owner is not None and owner.opdef is ops.convolution and uses.get(id(v)) == 1
                and v.type == result
                and dims[k] == tuple(range(result.rank))):
            return k
    return None


Steps = list[StepText]


def _fused(conv: Op, epilogue: Op, k: int) -> list[Op]:
    """The ops replacing `conv` and the epilogue that reads it as operand k: the fused
    convolution (or a convolution, when scaling was the whole epilogue), after the
    constant of scaled weights when it folds one (`_fold_scale`)."""
    program = parse_program(str(epilogue.attrs["program"]))
    order = [k, *(j for j in range(len(epilogue.operands)) if j != k)]
    new_index = {old: new for new, old in enumerate(order)}
    steps: Steps = [(s.opcode, s.qualifier,
                     [(is_op, new_index[i] if is_op else i) for is_op, i in s.args])
                    for s in program.steps]
    dims = [program.operand_dims[j] for j in order]
    extras: list[Value] = [epilogue.operands[j] for j in order[1:]]
    made: list[Op] = []
    weights = conv.operands[1]
    scaled = _fold_scale(conv, steps, dims, extras)
    if scaled is not None:
        made.append(scaled)
        weights = scaled.result
        steps, dims, extras = _without_first_step(steps, dims, extras)
    if not steps:
        plain = Op(ops.convolution, [conv.operands[0], weights], [epilogue.result.type],
                   conv.attrs, [epilogue.result.name])
        plain.result.sharding = epilogue.result.sharding
        return [*made, plain]
    attrs = ops.fused_convolution.check_attrs(
        {**conv.attrs, "program": format_program(dims, steps)})
    fused = Op(ops.fused_convolution, [conv.operands[0], weights, *extras],
               [epilogue.result.type], attrs, [epilogue.result.name])
    fused.result.sharding = epilogue.result.sharding
    return [*made, fused]


def _fold_scale(conv: Op, steps: Steps, dims: list[tuple[int, ...]],
                extras: list[Value]) -> Op | None:
    """The constant of the convolution's weights scaled per output feature, when the
    epilogue starts by multiplying its result by a constant that varies along the output
    features at most (a batch norm's scale, folded as onnxruntime folds it), and the
    weights are a float constant: conv(x, w) * s = conv(x, w * s), with w * s rounded
    once in the weights' type. None otherwise."""
    if not steps or steps[0][0] != ops.multiply.name:
        return None
    args = steps[0][2]
    other = [i for is_op, i in args if is_op and i != 0]
    if sorted(args) != sorted([(True, 0), *((True, i) for i in other)]) or len(other) != 1:
        return None
    scale_value = constant_value(extras[other[0] - 1])
    weights = constant_value(conv.operands[1])
    if scale_value is None or weights is None or not weights.type.dtype.is_float:
        return None
    feature = attr_of(conv.attrs, "output_feature_dim", int)
    scale = scale_value.array
    if scale_value.is_splat:
        factor = np.asarray(scale_value.splat_value, weights.type.dtype.numpy)
    elif dims[other[0]] == (feature,) and scale.dtype == weights.array.dtype:
        shape = [1] * weights.type.rank
        shape[attr_of(conv.attrs, "kernel_output_feature_dim", int)] = scale.shape[0]
        factor = scale.reshape(shape)
    else:
        return None
    if factor.dtype != weights.array.dtype:
        return None
    if weights.is_splat and factor.size == 1:  # stays a splat
        product = np.multiply(weights.array.reshape(-1)[:1], factor.reshape(-1))
        folded = Dense.of(np.broadcast_to(product.reshape(()), weights.type.shape),
                          weights.type.dtype)
    else:
        folded = Dense.of(np.multiply(weights.array, factor), weights.type.dtype)
    return Op(ops.constant, [], [folded.type], {"value": folded},
              [f"{conv.operands[1].name or 'w'}_scaled"])


def _without_first_step(steps: Steps, dims: list[tuple[int, ...]], extras: list[Value]
                        ) -> tuple[Steps, list[tuple[int, ...]], list[Value]]:
    """The program without its first step, whose result is now a0 (the scaled product),
    and without the operands no step reads any more."""
    rest = after_first_step(steps)
    used = sorted({i for _, _, args in rest for is_op, i in args if is_op} | {0})
    index = {old: new for new, old in enumerate(used)}
    rest = [(op, q, [(is_op, index[i] if is_op else i) for is_op, i in args])
            for op, q, args in rest]
    return rest, [dims[i] for i in used], [extras[i - 1] for i in used if i]
