"""Tuples and control flow: tuple, get-tuple-element, call, fusion (inlined), while,
conditional (both forms), the async wrappers, and the ordering-only opcodes."""

from __future__ import annotations

from nxcc.compiler.hlo.context import TOKEN, InstrContext, Tree, leaves, rebuild, value_count
from nxcc.compiler.hlo.nodes import ArrayShape, Shape
from nxcc.compiler.hlo.registry import converts
from nxcc.ir import ops
from nxcc.ir.attributes import Dense, Symbol
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Value


def relike(tree: Tree, values: list[Value]) -> Tree:
    """`tree` with its leaves replaced, in order, by `values` (consumed from the front)."""
    if isinstance(tree, Value):
        return values.pop(0)
    if isinstance(tree, tuple):
        return tuple(relike(t, values) for t in tree)
    return tree


@converts("tuple")
def lower_tuple(cx: InstrContext) -> Tree:
    return tuple(cx.args)


@converts("get-tuple-element")
def lower_get_tuple_element(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    arg = cx.args[0]
    index = cx.attr_as("index", int)
    if not isinstance(arg, tuple) or not 0 <= index < len(arg):
        size = len(arg) if isinstance(arg, tuple) else "not a tuple"
        raise cx.attr_error("index", f"expected an index into the operand's tuple ({size}), "
                            f"found {index}")
    return arg[index]


@converts("call")
def lower_call(cx: InstrContext) -> Tree:
    fn = cx.computation("to_apply")
    args = [v for a in cx.args for v in leaves(a)]
    results = cx.emit(ops.call, args, {"callee": fn})
    wanted = value_count(cx.instr.shape)
    if wanted != len(results):
        raise cx.error(f"the call's shape has {wanted} values but its callee returns "
                       f"{len(results)}")
    return rebuild(cx.instr.shape, results)


@converts("fusion")
def lower_fusion(cx: InstrContext) -> Tree:
    comp = cx.hlo_computation("calls")
    return cx.lowering.inline(comp, cx.b, cx.args, cx)


@converts("while")
def lower_while(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    state = leaves(cx.args[0])
    cond = cx.computation("condition")
    body = cx.computation("body")
    results = cx.emit(ops.while_, state, {"condition": cond, "body": body})
    return relike(cx.args[0], list(results))


@converts("conditional")
def lower_conditional(cx: InstrContext) -> Tree:
    """Every branch function takes the union of the branch operands (the IR's conditional
    passes the same arguments to each branch) and uses its own part."""
    if "branch_computations" in cx.instr.attrs:
        names = list(cx.attr_as("branch_computations", tuple))
        attr = "branch_computations"
    else:
        names = [cx.attr("true_computation"), cx.attr("false_computation")]
        attr = "true_computation"
    if len(cx.args) != len(names) + 1:
        raise cx.error(f"expected a selector and {len(names)} branch operands, found "
                       f"{len(cx.args)} operands", at=cx.instr.operands_offset)
    selector = cx.value(0)
    union = [v for a in cx.args[1:] for v in leaves(a)]
    symbols = []
    for i, name in enumerate(names):
        comp = cx.hlo_computation(attr, str(name))
        fn_name = cx.lowering.module.unique_function_name(f"{comp.name}.branch{i}")
        params = [Value(v.type, v.name) for v in union]
        fn = Function(fn_name, params)
        cx.lowering.module.add_function(fn)
        before = sum(len(leaves(a)) for a in cx.args[1:i + 1])
        mine = params[before:before + len(leaves(cx.args[i + 1]))]
        arg = relike(cx.args[i + 1], list(mine))
        root = cx.lowering.inline(comp, Builder(cx.lowering.module, fn), [arg], cx)
        fn.results = leaves(root)
        symbols.append(Symbol(fn_name))
    results = cx.emit(ops.conditional, [selector, *union], {"branches": tuple(symbols)})
    return rebuild(cx.instr.shape, results)


def zeros(cx: InstrContext, shape: Shape) -> Tree:
    """A tree of zero constants of `shape` (context words of the async/copy start ops)."""
    if isinstance(shape, ArrayShape):
        if shape.dtype == "token":
            return TOKEN
        t = cx.ir_type(shape)
        return cx.b.op(ops.constant, [], {"value": Dense.splat(t, t.dtype.numpy.type(0))})
    return tuple(zeros(cx, s) for s in shape.elements)


@converts("async-start")
def lower_async_start(cx: InstrContext) -> Tree:
    """((operands), result, context...): the wrapped computation runs here."""
    comp = cx.hlo_computation("calls")
    result = cx.lowering.inline(comp, cx.b, cx.args, cx)
    shape = cx.instr.shape
    rest = shape.elements[2:] if shape.is_tuple else ()  # type: ignore[union-attr]
    return (tuple(cx.args), result, *(zeros(cx, s) for s in rest))


@converts("async-update")
def lower_async_update(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    return cx.args[0]


@converts("async-done")
def lower_async_done(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    arg = cx.args[0]
    return arg[1] if isinstance(arg, tuple) else arg


@converts("copy-start")
def lower_copy_start(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    shape = cx.instr.shape
    rest = shape.elements[2:] if shape.is_tuple else ()  # type: ignore[union-attr]
    return (cx.args[0], cx.args[0], *(zeros(cx, s) for s in rest))


@converts("copy-done")
def lower_copy_done(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    arg = cx.args[0]
    return arg[0] if isinstance(arg, tuple) else arg


@converts("opt-barrier", "optimization-barrier", "domain")
def lower_identity(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    return cx.args[0]


@converts("add-dependency")
def lower_add_dependency(cx: InstrContext) -> Tree:
    cx.operand_count(2)
    return cx.args[0]


@converts("after-all")
def lower_after_all(cx: InstrContext) -> Tree:
    return TOKEN


@converts("partition-id")
def lower_partition_id(cx: InstrContext) -> Tree:
    cx.operand_count(0)
    return cx.emit1(ops.partition_id, [])


@converts("replica-id")
def lower_replica_id(cx: InstrContext) -> Tree:
    cx.operand_count(0)
    return cx.emit1(ops.replica_id, [])
