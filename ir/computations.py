"""Scalar computations (the reducers of reduce, scatter, reduce_window), made once per module.

`binary_computation(module, ops.add, DType.F32)` returns `@add_f32`, a function of two f32
scalars returning their sum, creating it on first use.
"""

from __future__ import annotations

from nxcc.ir import ops
from nxcc.ir.attributes import Symbol
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import OpDef, get_opdef
from nxcc.ir.types import TensorType


def binary_computation(module: Module, opcode: OpDef | str, dtype: DType) -> Symbol:
    """The function applying binary op `opcode` (a definition or its name) to two `dtype`
    scalars."""
    opdef = opcode if isinstance(opcode, OpDef) else get_opdef(opcode)
    name = f"{opdef.name}_{dtype.value}"
    if name not in module.functions:
        scalar = TensorType(dtype, ())
        a, b = Value(scalar, "a"), Value(scalar, "b")
        opdef.infer([scalar, scalar], {}, module)
        op = Op(opdef, [a, b], [scalar])
        module.add_function(Function(name, [a, b], [op], [op.result]))
    return Symbol(name)


def compare_computation(module: Module, direction: str, dtypes: list[DType]) -> Symbol:
    """A sort comparator over operands of `dtypes`: compares the first pair with `direction`."""
    name = f"compare_{direction.lower()}_" + "_".join(d.value for d in dtypes)
    if name not in module.functions:
        params = []
        for i, dt in enumerate(dtypes):
            scalar = TensorType(dt, ())
            params += [Value(scalar, f"a{i}"), Value(scalar, f"b{i}")]
        op = Op(ops.compare, params[:2], [TensorType(DType.PRED, ())], {"direction": direction})
        module.add_function(Function(name, params, [op], [op.result]))
    return Symbol(name)
