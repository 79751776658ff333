"""nxcc's typed SSA IR: element types, tensor types, values, ops, functions and modules.

Importing this package defines every core op (`nxcc.ir.ops`), so any IR module can look
definitions up by name (`get_opdef`) once it is imported.
"""

if not __name__.startswith("nxcc."):
    raise ImportError(f"import nxcc.{__name__}, not {__name__}: each layer has one import name")

from nxcc.ir import ops  # noqa: F401  (defines every core op; see the docstring)
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
