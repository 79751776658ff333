"""Control flow: If, Loop and Scan, lowered to the IR's ``conditional`` and ``while`` with
the subgraphs as functions of the module.

- If: a condition known at compile time converts the chosen branch in place; otherwise
  both branches become functions of the union of their captured values and a
  ``conditional`` picks one (their results must have the same types).
- Loop: a ``while`` over the state (iteration number, condition, loop-carried values,
  scan-output buffers, captured values); each iteration calls the body function and writes
  its scan outputs into row `i` of their buffers. Scan outputs need the trip count at
  compile time and a body that cannot stop early. A body that needs the iteration number
  at compile time (a Slice at `i`...) is unrolled instead when the trip count is known.
- Scan (opset 9+): a ``while`` over the static sequence length, slicing each scan input at
  position `i` (or `T - 1 - i` reversed) and writing each scan output likewise. Opset 8's
  batched form runs one such loop per batch entry.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from nxcc.compiler.onnx.context import NodeContext
from nxcc.compiler.onnx.errors import DYNAMIC, FrontendError
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.attributes import Symbol
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType

I64 = TensorType(DType.S64, ())
PRED = TensorType(DType.PRED, ())


def _graphs(ctx: NodeContext):  # noqa: ANN202 - the importer's GraphConverter
    if ctx.graphs is None:
        raise ctx.unsupported("a subgraph outside a graph importer")
    return ctx.graphs


def _new_function(b: Builder, name: str, types: Sequence[TensorType]) -> tuple[Function,
                                                                                Builder]:
    fn = b.module.add_function(Function(b.module.unique_function_name(name),
                                        [Value(t, f"s{i}") for i, t in enumerate(types)]))
    return fn, Builder(b.module, fn)


def _call(b: Builder, fn: Function, args: Sequence[Value]) -> list[Value]:
    return b.ops(ops.call, list(args), {"callee": Symbol(fn.name)})


def _scalar(b: Builder, v: Value, dtype: DType) -> Value:
    return b.convert(b.reshape(v, ()), dtype)


# -- If ---------------------------------------------------------------------------------

@converts("If")
def convert_if(ctx: NodeContext) -> list[Value]:
    b, graphs = ctx.b, _graphs(ctx)
    then_g, else_g = ctx.attr("then_branch"), ctx.attr("else_branch")
    cond = ctx.const(0)
    if cond is not None:
        chosen = then_g if bool(np.asarray(cond).reshape(-1)[0]) else else_g
        return graphs.inline_graph(chosen, ctx.label)
    selector = _scalar(b, ctx.input(0, "cond"), DType.PRED)
    then_fn, then_caps = graphs.subgraph(then_g, [], "if_then", f"{ctx.label}/then")
    else_fn, else_caps = graphs.subgraph(else_g, [], "if_else", f"{ctx.label}/else")
    if then_fn.result_types != else_fn.result_types:
        raise ctx.unsupported(f"branches of different types ({then_fn.result_types} and "
                              f"{else_fn.result_types})")
    # both branches take (then's captures, else's captures)
    then_fn.params += [Value(v.type) for v in else_caps]
    else_fn.params[:0] = [Value(v.type) for v in then_caps]
    return b.ops(ops.conditional, [selector, *then_caps, *else_caps],
                 {"branches": (Symbol(then_fn.name), Symbol(else_fn.name))})


# -- Loop -------------------------------------------------------------------------------

def _stops_early(body: onnx.GraphProto) -> bool:
    """Whether the body's condition output may be false: it is not just its condition
    input passed through."""
    out = body.output[0].name
    cond_in = body.input[1].name if len(body.input) > 1 else None
    if out == cond_in:
        return False
    for node in body.node:
        if out in node.output:
            return not (node.op_type == "Identity" and node.input[0] == cond_in)
    return True


@converts("Loop")
def convert_loop(ctx: NodeContext) -> list[Value]:
    body: onnx.GraphProto = ctx.attr("body")
    carried = [ctx.input(i) for i in range(2, len(ctx.inputs))]
    n_scan = len(body.output) - 1 - len(carried)
    if n_scan < 0 or len(body.input) != 2 + len(carried):
        raise ctx.fail("the body's inputs and outputs do not match the loop-carried values")
    trip = None
    if ctx.optional(0) is not None:
        known = ctx.const(0)
        if known is None and n_scan:
            ctx.const_input(0, "M")  # scan outputs need the trip count: raises DYNAMIC
        trip = None if known is None else int(np.asarray(known).reshape(-1)[0])
    if n_scan and (trip is None or (ctx.optional(1) is not None and _stops_early(body))):
        raise ctx.unsupported("scan outputs of a loop that may stop early")
    try:
        return _loop_while(ctx, body, carried, n_scan, trip)
    except FrontendError as exc:
        if exc.code != DYNAMIC or trip is None or (ctx.optional(1) is not None
                                                   and _stops_early(body)):
            raise
    return _loop_unrolled(ctx, body, carried, n_scan, trip)


def _loop_while(ctx: NodeContext, body: onnx.GraphProto, carried: list[Value], n_scan: int,
                trip: int | None) -> list[Value]:
    b, graphs = ctx.b, _graphs(ctx)
    params = [Value(I64, body.input[0].name), Value(PRED, body.input[1].name),
              *[Value(v.type, body.input[2 + k].name) for k, v in enumerate(carried)]]
    body_fn, caps = graphs.subgraph(body, params, "loop_body", f"{ctx.label}/body")
    outs = body_fn.result_types
    n = len(carried)
    if [t for t in outs[1:1 + n]] != [v.type for v in carried] or outs[0].size != 1:
        raise ctx.unsupported(f"loop-carried values that change type ({[v.type for v in carried]}"
                              f" -> {outs[1:1 + n]})")
    scans = [t.with_shape((trip or 0, *t.shape)) for t in outs[1 + n:]]
    cond0 = (_scalar(b, ctx.input(1), DType.PRED) if ctx.optional(1) is not None
             else b.splat(True, PRED))
    state = [b.splat(0, I64), cond0, *carried, *[b.splat(0, t) for t in scans], *caps]
    types = [v.type for v in state]

    cond_fn, cb = _new_function(b, "loop_cond", types)
    go = cond_fn.params[1]
    if trip is not None:
        below = cb.compare(cond_fn.params[0], cb.splat(trip, I64), direction="LT")
        go = cb.op(ops.and_, [below, go])
    cond_fn.results.append(go)

    step_fn, sb = _new_function(b, "loop_step", types)
    p = step_fn.params
    i, c = p[0], p[1]
    vals = p[2:2 + n]
    bufs = p[2 + n:2 + n + len(scans)]
    cap_params = p[2 + n + len(scans):]
    res = _call(sb, body_fn, [i, c, *vals, *cap_params])
    new_bufs = []
    for buf, elem in zip(bufs, res[1 + n:], strict=True):
        upd = sb.reshape(elem, (1, *elem.type.shape))
        zeros = [sb.splat(0, I64) for _ in elem.type.shape]
        new_bufs.append(sb.op(ops.dynamic_update_slice, [buf, upd, i, *zeros]))
    step_fn.results += [sb.add(i, sb.splat(1, I64)), _scalar(sb, res[0], DType.PRED),
                        *res[1:1 + n], *new_bufs, *cap_params]
    final = b.ops(ops.while_, state, {"condition": Symbol(cond_fn.name),
                                   "body": Symbol(step_fn.name)})
    return final[2:2 + n + len(scans)]


def _loop_unrolled(ctx: NodeContext, body: onnx.GraphProto, carried: list[Value], n_scan: int,
                   trip: int) -> list[Value]:
    """The body converted `trip` times in place, the iteration number a constant each time."""
    b = ctx.b
    vals = list(carried)
    cond = (ctx.input(1) if ctx.optional(1) is not None else b.splat(True, PRED))
    rows: list[list[Value]] = [[] for _ in range(n_scan)]
    for it in range(trip):
        inputs = {body.input[0].name: b.constant(np.int64(it)), body.input[1].name: cond,
                  **{body.input[2 + k].name: v for k, v in enumerate(vals)}}
        outs = _graphs(ctx).inline_graph(body, f"{ctx.label}/iter{it}", inputs)
        cond, vals = outs[0], outs[1:1 + len(vals)]
        for k, elem in enumerate(outs[1 + len(vals):]):
            rows[k].append(b.reshape(elem, (1, *elem.type.shape)))
    return [*vals, *[b.concatenate(*r, dimension=0) for r in rows]]


# -- Scan -------------------------------------------------------------------------------

@converts("Scan")
def convert_scan(ctx: NodeContext) -> list[Value]:
    if ctx.opset < 9:
        return _scan8(ctx)
    inputs = [ctx.input(i) for i in range(len(ctx.inputs))]
    return _scan(ctx, inputs)


def _ints(ctx: NodeContext, key: str, n: int) -> list[int]:
    values = [int(v) for v in ctx.attr(key, [0] * n)]
    if len(values) != n:
        raise ctx.fail(f"attribute '{key}' needs {n} entries, got {values}")
    return values


def _scan(ctx: NodeContext, inputs: list[Value]) -> list[Value]:
    b, graphs = ctx.b, _graphs(ctx)
    body: onnx.GraphProto = ctx.attr("body")
    m = int(ctx.attr("num_scan_inputs"))
    if not 0 < m <= len(inputs):
        raise ctx.fail(f"attribute 'num_scan_inputs' is {m}, but the node has "
                       f"{len(inputs)} inputs")
    states, xs = inputs[:len(inputs) - m], inputs[len(inputs) - m:]
    n = len(states)
    k = len(body.output) - n
    in_axes = [ctx.axis(a, x.type.rank) for a, x in zip(_ints(ctx, "scan_input_axes", m), xs,
                                                         strict=True)]
    in_dirs = _ints(ctx, "scan_input_directions" if ctx.opset >= 9 else "directions", m)
    lengths = {x.type.shape[a] for x, a in zip(xs, in_axes, strict=True)}
    if len(lengths) != 1:
        raise ctx.fail(f"scan inputs have different sequence lengths {sorted(lengths)}")
    steps = lengths.pop()
    slices = [x.type.with_shape(x.type.shape[:a] + x.type.shape[a + 1:])
              for x, a in zip(xs, in_axes, strict=True)]
    params = [Value(t, body.input[j].name) for j, t in
              enumerate([*(s.type for s in states), *slices])]
    body_fn, caps = graphs.subgraph(body, params, "scan_body", f"{ctx.label}/body")
    outs = body_fn.result_types
    if outs[:n] != [s.type for s in states]:
        raise ctx.unsupported(f"scan states that change type ({[s.type for s in states]} -> "
                              f"{outs[:n]})")
    elems = outs[n:]
    out_axes = [ctx.axis(a, t.rank + 1) for a, t in zip(_ints(ctx, "scan_output_axes", k),
                                                         elems, strict=True)]
    out_dirs = _ints(ctx, "scan_output_directions", k)
    bufs = [t.with_shape(t.shape[:a] + (steps,) + t.shape[a:])
            for t, a in zip(elems, out_axes, strict=True)]
    state = [b.splat(0, I64), *states, *xs, *[b.splat(0, t) for t in bufs], *caps]
    types = [v.type for v in state]

    cond_fn, cb = _new_function(b, "scan_cond", types)
    cond_fn.results.append(cb.compare(cond_fn.params[0], cb.splat(steps, I64), direction="LT"))

    step_fn, sb = _new_function(b, "scan_step", types)
    p = step_fn.params
    i = p[0]
    cur, seqs = p[1:1 + n], p[1 + n:1 + n + m]
    bufp = p[1 + n + m:1 + n + m + k]
    cap_params = p[1 + n + m + k:]
    back = sb.subtract(sb.splat(steps - 1, I64), i)
    args = []
    for x, a, d, t in zip(seqs, in_axes, in_dirs, slices, strict=True):
        at = back if d else i
        starts = [at if j == a else sb.splat(0, I64) for j in range(x.type.rank)]
        piece = sb.op(ops.dynamic_slice, [x, *starts], {"slice_sizes": tuple(
            1 if j == a else s for j, s in enumerate(x.type.shape))})
        args.append(sb.reshape(piece, t.shape))
    res = _call(sb, body_fn, [*cur, *args, *cap_params])
    new_bufs = []
    for buf, elem, a, d in zip(bufp, res[n:], out_axes, out_dirs, strict=True):
        at = back if d else i
        upd = sb.reshape(elem, elem.type.shape[:a] + (1,) + elem.type.shape[a:])
        starts = [at if j == a else sb.splat(0, I64) for j in range(buf.type.rank)]
        new_bufs.append(sb.op(ops.dynamic_update_slice, [buf, upd, *starts]))
    step_fn.results += [sb.add(i, sb.splat(1, I64)), *res[:n], *seqs, *new_bufs, *cap_params]
    final = b.ops(ops.while_, state, {"condition": Symbol(cond_fn.name),
                                   "body": Symbol(step_fn.name)})
    return [*final[1:1 + n], *final[1 + n + m:1 + n + m + k]]


def _scan8(ctx: NodeContext) -> list[Value]:
    """Scan-8: every input has a leading batch dim; one opset-9 scan per batch entry (the
    scan axis is 1 of the batched tensors), results stacked back along the batch."""
    b = ctx.b
    if ctx.optional(0) is not None:
        lens = ctx.const(0)
        inputs = [ctx.input(i) for i in range(1, len(ctx.inputs))]
        steps = inputs[-1].type.shape[1] if inputs else 0
        if lens is None or np.any(np.asarray(lens) != steps):
            raise ctx.unsupported("sequence_lens other than the full length")
    inputs = [ctx.input(i) for i in range(1, len(ctx.inputs))]
    batch = inputs[0].type.shape[0]
    per_batch: list[list[Value]] = []
    for i in range(batch):
        row = [b.reshape(b.slice(v, start_indices=(i, *(0,) * (v.type.rank - 1)),
                                 limit_indices=(i + 1, *v.type.shape[1:]),
                                 strides=(1,) * v.type.rank), v.type.shape[1:])
               for v in inputs]
        per_batch.append(_scan(ctx, row))
    return [b.concatenate(*[b.reshape(r[j], (1, *r[j].type.shape)) for r in per_batch],
                          dimension=0) for j in range(len(per_batch[0]))]

