"""Builder: appends ops to a function, checking attributes and inferring result types.

    b = Builder(module, fn)
    y = b.op(ops.add, [x, x])                  # one result
    v, i = b.ops(ops.sort, [k, idx], {...})    # several results
    r = b.add(x, x)                            # a typed method per op (builder_ops.py)
    y = b.op("add", [x, x])                    # a text name is looked up (the parser's way)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import Dense
from nxcc.ir.builder_ops import BuilderOps
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import OpDef, get_opdef
from nxcc.ir.types import TensorType


class Builder(BuilderOps):
    """Builds ops at the end of `function`, which must belong to `module`.

    Every core op has a typed method (`BuilderOps`, generated from the definitions);
    `op`/`ops`/`create` take the definition (``ops.add``) or its text name."""

    def __init__(self, module: Module, function: Function) -> None:
        self.module = module
        self.function = function

    def create(
        self, opcode: OpDef | str, operands: Sequence[Value],
        attrs: Mapping[str, object] | None = None,
    ) -> Op:
        """A new op appended to the function; TypeRuleError if operands/attrs are wrong."""
        opdef = opcode if isinstance(opcode, OpDef) else get_opdef(opcode)
        checked = opdef.check_attrs(attrs or {})
        types = opdef.infer([v.type for v in operands], checked, self.module)
        op = Op(opdef, operands, types, checked)
        self.function.body.append(op)
        return op

    def op(self, opcode: OpDef | str, operands: Sequence[Value],
           attrs: Mapping[str, object] | None = None) -> Value:
        """Like `create`, returning the op's only result."""
        return self.create(opcode, operands, attrs).result

    def ops(self, opcode: OpDef | str, operands: Sequence[Value],
            attrs: Mapping[str, object] | None = None) -> list[Value]:
        """Like `create`, returning all the op's results."""
        return self.create(opcode, operands, attrs).results

    # Conveniences used by every frontend.

    def constant(self, value: np.ndarray | np.generic | float | int | bool,
                 dtype: DType | None = None
                 ) -> Value:
        """A constant op holding `value` (as `dtype` when given)."""
        return self.op(ops.constant, [], {"value": Dense.of(value, dtype)})

    def splat(self, value: float | int | bool, type_: TensorType) -> Value:
        return self.op(ops.constant, [], {"value": Dense.splat(type_, value)})

    def broadcast_to(self, x: Value, shape: Sequence[int]) -> Value:
        """`x` broadcast numpy-style (trailing dims aligned) to `shape`; `x` if it already is."""
        shape = tuple(shape)
        if x.type.shape == shape:
            return x
        offset = len(shape) - x.type.rank
        dims = list(range(offset, len(shape)))
        return self.op(ops.broadcast_in_dim, [x],
                       {"shape": shape, "broadcast_dimensions": tuple(dims)})

    def reshape(self, x: Value, shape: Sequence[int]) -> Value:
        if x.type.shape == tuple(shape):
            return x
        return self.op(ops.reshape, [x], {"shape": tuple(shape)})

    def convert(self, x: Value, dtype: DType) -> Value:
        if x.type.dtype is dtype:
            return x
        return self.op(ops.convert, [x], {"dtype": dtype})
