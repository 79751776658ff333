"""Scalar computations (the reducers of reduce, scatter, reduce_window), made once per module.

`binary_computation(module, "add", DType.F32)` returns `@add_f32`, a function of two f32
scalars returning their sum, creating it on first use.
"""

from __future__ import annotations

from nxcc.ir.attributes import Symbol
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import get_opdef
from nxcc.ir.types import TensorType


def binary_computation(module: Module, opcode: str, dtype: DType) -> Symbol:
    """The function applying binary op `opcode` to two `dtype` scalars."""
    name = f"{opcode}_{dtype.value}"
    if name not in module.functions:
        scalar = TensorType(dtype, ())
        a, b = Value(scalar, "a"), Value(scalar, "b")
        get_opdef(opcode).infer([scalar, scalar], {}, module)
        op = Op(opcode, [a, b], [scalar])
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
        op = Op("compare", params[:2], [TensorType(DType.PRED, ())], {"direction": direction})
        module.add_function(Function(name, params, [op], [op.result]))
    return Symbol(name)
