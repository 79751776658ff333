"""Evaluate IR directly with the kernels: used by constant folding and by tests.

This is not the executor (which runs the NEFF's planned program); it walks a function op by
op, allocating fresh result arrays, through the same kernels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue
from nxcc.ir.core import Module, Op
from nxcc.ir.kernels import get_kernel
from nxcc.ir.opdef import OpDef
from nxcc.ir.types import TensorType


class IRContext:
    """A `KernelContext` that runs module functions by interpretation."""

    def __init__(self, module: Module, partition_id: int = 0, replica_id: int = 0) -> None:
        self.module = module
        self.partition_id = partition_id
        self.replica_id = replica_id

    def call(self, function: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        fn = self.module.functions[function]
        env: dict[int, np.ndarray] = {}
        for p, a in zip(fn.params, args, strict=True):
            env[id(p)] = np.asarray(a)
        for op in fn.body:
            outs = evaluate_op(op, [env[id(v)] for v in op.operands], self)
            for r, o in zip(op.results, outs, strict=True):
                env[id(r)] = o
        return [env[id(r)] for r in fn.results]

    def binary_op(self, function: str) -> OpDef | None:
        return binary_op_of(self.module, function)

    def collective(self, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
        raise RuntimeError(f"{opcode} cannot be evaluated outside a multi-core execution")


def binary_op_of(module: Module, function: str) -> OpDef | None:
    """The op's definition when `function` returns one binary op of its two parameters, in
    order (either order for commutative ops); None otherwise."""
    fn = module.functions.get(function)
    if fn is None or len(fn.params) != 2 or len(fn.body) != 1 or len(fn.results) != 1:
        return None
    op = fn.body[0]
    if fn.results[0] is not op.results[0] or len(op.operands) != 2:
        return None
    in_order = [id(v) for v in op.operands] == [id(p) for p in fn.params]
    swapped = [id(v) for v in op.operands] == [id(p) for p in reversed(fn.params)]
    if in_order or (swapped and op.opdef in COMMUTATIVE):
        return op.opdef
    return None


COMMUTATIVE = frozenset({ops.add, ops.multiply, ops.maximum, ops.minimum, ops.and_, ops.or_,
                         ops.xor})


def evaluate_op(op: Op, args: Sequence[np.ndarray], ctx: IRContext) -> list[np.ndarray]:
    """The results of `op` on `args`, in freshly allocated arrays."""
    types = [r.type for r in op.results]
    outs = allocate_results(op.opdef, types, args)
    get_kernel(op.opdef)(args, outs, op.attrs, ctx)
    return outs


def allocate_results(opdef: OpDef, types: Sequence[TensorType], args: Sequence[np.ndarray]
                     ) -> list[np.ndarray]:
    """Fresh result arrays for an op. Elementwise ops take the broadcast shape of their
    arguments, so a scalar computation (a reducer, a comparator) runs elementwise on whole
    arrays, as the kernel contract promises."""
    if args and is_shape_polymorphic(opdef, types, args):
        shape = np.broadcast_shapes(*(np.shape(a) for a in args))
        return [np.empty(shape, t.dtype.numpy) for t in types]
    return [np.empty(t.shape, t.dtype.numpy) for t in types]


def is_shape_polymorphic(opdef: OpDef, types: Sequence[TensorType], args: Sequence[np.ndarray]
                         ) -> bool:
    """Whether `opdef` maps elements one to one (so it may run on any common shape)."""
    if opdef.elementwise:
        return True
    return (opdef is ops.bitcast_convert and len(types) == 1
            and types[0].dtype.itemsize == np.asarray(args[0]).dtype.itemsize)
