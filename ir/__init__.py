"""nxcc's typed SSA IR: element types, tensor types, values, ops, functions and modules."""

from nxcc.ir.attributes import AttrKind, Dense, Symbol
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import OP_DEFS, OpDef, TypeRuleError, get_opdef
from nxcc.ir.types import TensorType

__all__ = [
    "OP_DEFS",
    "AttrKind",
    "Builder",
    "DType",
    "Dense",
    "Function",
    "Module",
    "Op",
    "OpDef",
    "Symbol",
    "TensorType",
    "TypeRuleError",
    "Value",
    "get_opdef",
]
