"""Checks of the functions an op refers to (reduction computations, loop bodies...)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nxcc.ir.attributes import Symbol
from nxcc.ir.ops._rules import fail
from nxcc.ir.types import TensorType

if TYPE_CHECKING:
    from nxcc.ir.core import Function, Module


def lookup(op: str, module: Module | None, sym: Symbol) -> Function | None:
    """The function `sym` names, None when no module is at hand; error if it is missing."""
    if module is None:
        return None
    fn = module.functions.get(sym.name)
    if fn is None:
        raise fail(f"{op}: refers to @{sym.name}, which the module does not define")
    return fn


def check_signature(
    op: str, fn: Function | None, params: list[TensorType], results: list[TensorType] | None
) -> None:
    """`fn` takes `params` and (when given) returns `results`."""
    if fn is None:
        return
    got = fn.param_types
    if got != params:
        raise fail(
            f"{op}: @{fn.name} takes ({', '.join(map(str, got))}), expected "
            f"({', '.join(map(str, params))})"
        )
    if results is not None and fn.result_types != results:
        raise fail(
            f"{op}: @{fn.name} returns ({', '.join(map(str, fn.result_types))}), expected "
            f"({', '.join(map(str, results))})"
        )


def scalar_of(t: TensorType) -> TensorType:
    return TensorType(t.dtype, ())
