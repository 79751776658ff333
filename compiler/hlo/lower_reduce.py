"""Reductions and windowed ops: reduce (variadic too), reduce-window, select-and-scatter,
sort (multi-operand, stable), and map (its scalar computation applied elementwise)."""

from __future__ import annotations

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.attributes import Window
from nxcc.compiler.hlo.context import InstrContext, Tree
from nxcc.compiler.hlo.lower_elementwise import BINARY, UNARY
from nxcc.compiler.hlo.registry import converts
from nxcc.ir import ops
from nxcc.ir.attributes import Dense
from nxcc.ir.core import Value


def _split(cx: InstrContext) -> tuple[list[Value], list[Value]]:
    values = cx.values()
    if len(values) % 2 or not values:
        raise cx.error(f"expected inputs then as many init values, found {len(values)} "
                       "operands", at=cx.instr.operands_offset)
    n = len(values) // 2
    return values[:n], values[n:]


def _results(cx: InstrContext, results: list[Value]) -> Tree:
    return tuple(results) if cx.instr.shape.is_tuple else results[0]


@converts("reduce")
def lower_reduce(cx: InstrContext) -> Tree:
    inputs, inits = _split(cx)
    fn = cx.computation("to_apply")
    return _results(cx, cx.emit(ops.reduce, inputs + inits, {
        "dimensions": cx.attr_as("dimensions", tuple),
        "computation": fn}))


def _window(cx: InstrContext, rank: int) -> Window:
    window = cx.attr("window")
    assert isinstance(window, Window)
    if window.rank != rank:
        raise cx.attr_error("window", f"expected a window of {rank} dimensions (the operand's "
                            f"rank), found {window.rank}")
    if any(window.rhs_reversal):
        raise cx.attr_error("window", "expected no rhs_reversal in a reduction window")
    return window


@converts("reduce-window")
def lower_reduce_window(cx: InstrContext) -> Tree:
    inputs, inits = _split(cx)
    window = _window(cx, inputs[0].type.rank)
    return _results(cx, cx.emit(ops.reduce_window, inputs + inits, {
        "window_dimensions": window.size,
        "window_strides": window.stride,
        "base_dilations": window.lhs_dilate,
        "window_dilations": window.rhs_dilate,
        "padding": window.pad,
        "computation": cx.computation("to_apply"),
    }))


@converts("select-and-scatter")
def lower_select_and_scatter(cx: InstrContext) -> Tree:
    cx.operand_count(3)
    operand = cx.value(0)
    window = _window(cx, operand.type.rank)
    if any(d != 1 for d in (*window.lhs_dilate, *window.rhs_dilate)):
        raise cx.attr_error("window", "expected no dilation in a select-and-scatter window")
    return cx.emit1(ops.select_and_scatter, cx.values(), {
        "window_dimensions": window.size,
        "window_strides": window.stride,
        "padding": window.pad,
        "select": cx.computation("select"),
        "scatter": cx.computation("scatter"),
    })


@converts("sort")
def lower_sort(cx: InstrContext) -> Tree:
    values = cx.values()
    dims = cx.attr("dimensions")
    if len(dims) != 1:  # type: ignore[arg-type]
        raise cx.attr_error("dimensions", "expected one sort dimension")
    return _results(cx, cx.emit(ops.sort, values, {
        "dimension": dims[0],  # type: ignore[index]
        "is_stable": cx.attr("is_stable", False),
        "comparator": cx.computation("to_apply"),
    }))


_ELEMENTWISE = {**UNARY, **BINARY, "compare": ops.compare, "select": ops.select,
                "clamp": ops.clamp}


@converts("map")
def lower_map(cx: InstrContext) -> Tree:
    """map(x...) applies its scalar computation to every element: each scalar instruction of
    the computation is emitted once on whole arrays (constants broadcast)."""
    values = cx.values()
    out = cx.out_type
    dims = cx.attr_as("dimensions", tuple, tuple(range(out.rank)))
    if dims != tuple(range(out.rank)):
        raise cx.attr_error("dimensions", "expected map over every dimension")
    comp = cx.hlo_computation("to_apply")
    params = cx.lowering.parameters(comp)
    if len(params) != len(values):
        raise cx.error(f"expected {len(params)} operands for '{comp.name}', found "
                       f"{len(values)}", at=cx.instr.operands_offset)
    env: dict[str, Value] = {p.name: v for p, v in zip(params, values, strict=True)}
    for instr in comp.instructions:
        if instr.opcode == "parameter":
            continue
        if instr.opcode == "constant" and instr.literal is not None:
            dt = cx.dtype(instr.shape.dtype)
            env[instr.name] = cx.b.op(ops.constant, [], {"value": Dense.splat(
                out.with_dtype(dt), instr.literal.reshape(-1)[0])})
            continue
        args = [env[o] for o in instr.operands]
        if instr.opcode in ("convert",):
            dt = cx.dtype(instr.shape.dtype)
            env[instr.name] = cx.emit1(ops.convert, args, {"dtype": dt})
        elif instr.opcode in _ELEMENTWISE:
            attrs = {"direction": instr.attr("direction")} if instr.opcode == "compare" else {}
            env[instr.name] = cx.emit1(_ELEMENTWISE[instr.opcode], args, attrs)
        else:
            raise cx.error(f"expected a map computation of elementwise instructions, found "
                           f"'{instr.opcode}' in '{comp.name}'", E.UNSUPPORTED_FEATURE)
    return env[comp.root.name]
