"""Control flow and identity ops: call, while, conditional, partition_id, replica_id."""

from __future__ import annotations

from nxcc.ir.attributes import AttrKind
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import AttrSpec, OpDef, define
from nxcc.ir.ops._rules import check_scalar, fail
from nxcc.ir.ops._symbols import check_signature, lookup
from nxcc.ir.types import TensorType


def _call(ts, attrs, module):
    fn = lookup("call", module, attrs["callee"])
    if fn is None:
        raise fail("call: needs the module to know the callee's result types")
    check_signature("call", fn, list(ts), None)
    return fn.result_types


call = define(OpDef("call", _call, attrs={"callee": AttrSpec(AttrKind.SYMBOL)}, operands=None))


def _while(ts, attrs, module):
    cond = lookup("while", module, attrs["condition"])
    body = lookup("while", module, attrs["body"])
    check_signature("while", cond, list(ts), [TensorType(DType.PRED, ())])
    check_signature("while", body, list(ts), list(ts))
    return list(ts)


while_ = define(
    OpDef(
        "while",
        _while,
        attrs={"condition": AttrSpec(AttrKind.SYMBOL), "body": AttrSpec(AttrKind.SYMBOL)},
        operands=None,
        doc="while(state...): state = @body(state) while @condition(state).",
    )
)


def _conditional(ts, attrs, module):
    selector, args = ts[0], list(ts[1:])
    check_scalar("conditional", "selector", selector)
    if selector.dtype is not DType.PRED and selector.dtype is not DType.S32:
        raise fail(f"conditional: selector must be pred or s32, got {selector}")
    branches = attrs["branches"]
    if selector.dtype is DType.PRED and len(branches) != 2:
        raise fail("conditional: a pred selector needs exactly 2 branches (true, false)")
    if not branches:
        raise fail("conditional: needs at least one branch")
    results: list[TensorType] | None = None
    for sym in branches:
        fn = lookup("conditional", module, sym)
        check_signature("conditional", fn, args, results)
        if fn is not None and results is None:
            results = fn.result_types
    if results is None:
        raise fail("conditional: needs the module to know the branches' result types")
    return results


conditional = define(
    OpDef(
        "conditional",
        _conditional,
        attrs={"branches": AttrSpec(AttrKind.SYMBOLS)},
        operands=None,
        min_operands=1,
        doc="conditional(selector, args...): pred true runs branches[0], false branches[1]; "
        "an s32 index runs that branch, out of range the last.",
    )
)


def _id(ts, attrs, module):
    return [TensorType(DType.U32, ())]


partition_id = define(OpDef("partition_id", _id, operands=0,
                            doc="This core's index within its program."))
replica_id = define(OpDef("replica_id", _id, operands=0, doc="This replica's index."))


def _barrier(ts, attrs, module):
    return list(ts)


optimization_barrier = define(OpDef(
    "optimization_barrier", _barrier, operands=None, min_operands=1,
    doc="Identity; recomputation reads through one so CSE keeps the copy apart."))
