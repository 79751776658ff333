"""nxcc's typed SSA IR: element types, tensor types, values, ops, functions and modules."""

from ir.attributes import AttrKind, Dense, Symbol
from ir.builder import Builder
from ir.core import Function, Module, Op, Value
from ir.dtypes import DType
from ir.opdef import OP_DEFS, OpDef, TypeRuleError, get_opdef
from ir.types import TensorType

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
