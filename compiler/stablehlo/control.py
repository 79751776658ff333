"""Ops with regions or callees: reduce, reduce_window, select_and_scatter, sort, scatter,
while, case, if, func.call, composite."""

from __future__ import annotations

from nxcc.compiler.hlo.attributes import Window
from nxcc.compiler.hlo.nodes import ArrayShape, TupleShape
from nxcc.compiler.stablehlo.attrs import AttrReader, dimension_numbers
from nxcc.compiler.stablehlo.builder import CompBuilder, free_values
from nxcc.compiler.stablehlo.registry import converts
from nxcc.compiler.stablehlo.syntax import Op, Sym


def _applied(b: CompBuilder, op: Op, a: AttrReader, init_shapes: list) -> str:
    """The computation of `applies stablehlo.add`: the binary op on two scalars."""
    if "applies" not in op.words or op.words.index("applies") + 1 >= len(op.words):
        raise a.error(f"expected a reducer region or 'applies OP' for {op.name}")
    body_op = op.words[op.words.index("applies") + 1]
    if len(init_shapes) != 1:
        raise a.error("expected one input for 'applies OP'")
    scalar = init_shapes[0]
    sub = CompBuilder(b.conv, b.conv.unique(f"{b.name}.{body_op.split('.')[-1]}"))
    lhs = sub.parameter("%lhs", scalar, 0)
    rhs = sub.parameter("%rhs", scalar, 1)
    opcode = body_op.split(".", 1)[1].replace("_", "-")
    result = sub.add(opcode, scalar, [lhs, rhs], {}, op)
    comp = sub.finish([result], op.offset)
    b.conv.computations.append(comp)
    return comp.name


def _body(b: CompBuilder, op: Op, a: AttrReader, what: str, init_shapes: list) -> str:
    if op.regions:
        return b.conv.region(b, op, 0, what)
    return _applied(b, op, a, init_shapes)


@converts("stablehlo.reduce")
def reduce(b: CompBuilder, op: Op, a: AttrReader) -> None:
    operands = op.operands + op.inits
    inits = operands[len(operands) // 2:]
    shapes = [b.shape_of(o, op.offset) for o in inits]
    b.emit(op, "reduce", operands, {"dimensions": a.ints("dimensions"),
                                    "to_apply": _body(b, op, a, "reducer", shapes)})


def _window(a: AttrReader, rank: int) -> Window:
    one = (1,) * rank
    return Window(size=a.ints("window_dimensions"), stride=a.ints("window_strides", default=one),
                  pad=a.pairs("padding", rank), lhs_dilate=a.ints("base_dilations", default=one),
                  rhs_dilate=a.ints("window_dilations", default=one), rhs_reversal=(0,) * rank)


@converts("stablehlo.reduce_window")
def reduce_window(b: CompBuilder, op: Op, a: AttrReader) -> None:
    n = len(op.operands) // 2
    shapes = [b.shape_of(o, op.offset) for o in op.operands[n:]]
    rank = len(b.operand_array(op, 0).dims)
    b.emit(op, "reduce-window", op.operands, {
        "window": _window(a, rank), "to_apply": _body(b, op, a, "reducer", shapes)})


@converts("stablehlo.select_and_scatter")
def select_and_scatter(b: CompBuilder, op: Op, a: AttrReader) -> None:
    rank = len(b.operand_array(op, 0).dims)
    b.emit(op, "select-and-scatter", op.operands, {
        "window": _window(a, rank), "select": b.conv.region(b, op, 0, "select"),
        "scatter": b.conv.region(b, op, 1, "scatter")})


@converts("stablehlo.sort")
def sort(b: CompBuilder, op: Op, a: AttrReader) -> None:
    rank = len(b.operand_array(op, 0).dims)
    dim = a.int_("dimension", default=-1)
    b.emit(op, "sort", op.operands, {
        "dimensions": (dim % rank if rank else 0,), "is_stable": a.bool_("is_stable"),
        "to_apply": b.conv.region(b, op, 0, "comparator")})


@converts("stablehlo.scatter")
def scatter(b: CompBuilder, op: Op, a: AttrReader) -> None:
    attrs = dimension_numbers(a, "scatter_dimension_numbers", (
        "update_window_dims", "inserted_window_dims", "input_batching_dims",
        "scatter_indices_batching_dims", "scatter_dims_to_operand_dims"))
    attrs["indices_are_sorted"] = a.bool_("indices_are_sorted")
    attrs["unique_indices"] = a.bool_("unique_indices")
    attrs["to_apply"] = b.conv.region(b, op, 0, "update")
    b.emit(op, "scatter", op.operands, attrs)


@converts("stablehlo.while")
def while_(b: CompBuilder, op: Op, a: AttrReader) -> None:
    """A while over the tuple (operands..., outer values the regions use...)."""
    if len(op.regions) != 2:
        raise a.error(f"expected cond and do regions for stablehlo.while, found "
                      f"{len(op.regions)}")
    cond, body = op.regions[0][0], op.regions[1][0]
    captured = list(dict.fromkeys(v for blk in (cond, body) for v in free_values(blk)))
    params_c = list(cond.args)
    params_b = list(body.args)
    conv = b.conv
    cname = conv.capturing_region(b, cond, f"{b.name}.cond", params_c, captured, True)
    bname = conv.capturing_region(b, body, f"{b.name}.body", params_b, captured, True)
    state = [b.ref(o, at) for o, at in b.operand_pairs(op, op.operands)]
    state += [b.ref(v, op.offset) for v in captured]
    shape = TupleShape(tuple(b.shapes[s] for s in state))
    init = b.add("tuple", shape, state, {}, op)
    loop = b.add("while", shape, [init], {"condition": cname, "body": bname}, op,
                 op.results[0].split("#")[0].lstrip("%") if op.results else "while")
    _bind_elements(b, op, a, loop, shape)


def _bind_elements(b: CompBuilder, op: Op, a: AttrReader, name: str, shape: TupleShape
                   ) -> None:
    if len(op.results) > len(shape.elements):
        raise a.error(
            f"{len(op.results)} results named, but the op gives {len(shape.elements)}")
    for k, res in enumerate(op.results):
        b.bind(res, b.add("get-tuple-element", shape.elements[k], [name], {"index": k}, op,
                          res.lstrip("%").replace("#", ".")))


def _branches(b: CompBuilder, op: Op, what: str) -> tuple[list[str], list[str]]:
    """(computation names, operand per branch): branch k takes the outer values it uses."""
    names, operands = [], []
    for k, region in enumerate(op.regions):
        block = region[0]
        captured = free_values(block)
        names.append(b.conv.capturing_region(b, block, f"{b.name}.{what}{k}", [], captured,
                                             False))
        refs = [b.ref(v, block.offset) for v in captured]
        if len(refs) == 1:
            operands.append(refs[0])
        else:
            operands.append(b.add("tuple", TupleShape(tuple(b.shapes[r] for r in refs)), refs,
                                  {}, op))
    return names, operands


def _conditional(b: CompBuilder, op: Op, attrs: dict[str, object], operands: list[str]
                 ) -> None:
    selector = b.ref(op.operands[0], op.operand_offsets[0])
    shape = op.out_types[0] if len(op.out_types) == 1 else TupleShape(tuple(op.out_types))
    name = b.add("conditional", shape, [selector, *operands], attrs, op,
                 op.results[0].split("#")[0].lstrip("%") if op.results else "conditional")
    if isinstance(shape, ArrayShape):
        b.bind_results(op, name, shape)
    else:
        _bind_elements(b, op, AttrReader(op, b.conv.source), name, shape)


@converts("stablehlo.case")
def case(b: CompBuilder, op: Op, a: AttrReader) -> None:
    names, operands = _branches(b, op, "branch")
    _conditional(b, op, {"branch_computations": tuple(names)}, operands)


@converts("stablehlo.if")
def if_(b: CompBuilder, op: Op, a: AttrReader) -> None:
    if len(op.regions) != 2:
        raise a.error(f"expected two regions for stablehlo.if, found {len(op.regions)}")
    names, operands = _branches(b, op, "branch")
    _conditional(b, op, {"true_computation": names[0], "false_computation": names[1]},
                 operands)


@converts("func.call", "call")
def call(b: CompBuilder, op: Op, a: AttrReader) -> None:
    callee = op.callee or a.get("callee")
    name = callee.name if isinstance(callee, Sym) else callee
    target = b.conv.callee(str(name), op.offset)
    b.emit(op, "call", op.operands, {"to_apply": target})


@converts("stablehlo.composite")
def composite(b: CompBuilder, op: Op, a: AttrReader) -> None:
    """A composite is its decomposition, called."""
    dec = a.need("decomposition")
    name = dec.name if isinstance(dec, Sym) else str(dec)
    b.emit(op, "call", op.operands, {"to_apply": b.conv.callee(name, op.offset)})



