"""RNN, GRU and LSTM as a ``while`` loop over time, one per direction.

The input projection X W^T + Wb is one dot_general over all time steps before the loop;
each iteration slices step `t` of it (`T - 1 - t` in reverse), adds H R^T + Rb, applies the
cell, and writes H into row `t` of the Y buffer. With sequence_lens, steps at or beyond a
batch entry's length keep its state and output zeros; run from T - 1 down, that also makes
the reverse direction start at each sequence's own last element. Gates follow ONNX's
layouts (GRU: z, r, h; LSTM: i, o, f, c) and default activations (Sigmoid, Tanh, Tanh).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from nxcc.compiler.onnx.context import NodeContext, splat_like
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.attributes import Symbol
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType

I64 = TensorType(DType.S64, ())
Act = Callable[[Builder, Value], Value]
# cell(builder, x_t projection [B, G*H], states, invariants) -> (new states, output h)
Cell = Callable[[Builder, Value, list[Value], list[Value]], tuple[list[Value], Value]]

DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"],
                "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def activation(ctx: NodeContext, name: str, alpha: float | None, beta: float | None) -> Act:
    """The ONNX recurrent activation `name` (with its alpha/beta) as IR ops."""
    def k(b: Builder, v: float, x: Value) -> Value:
        return splat_like(b, v, x)

    key = name.lower()
    if key == "tanh":
        return lambda b, x: b.tanh(x)
    if key == "sigmoid":
        return lambda b, x: b.logistic(x)
    if key == "relu":
        return lambda b, x: b.maximum(x, k(b, 0, x))
    if key == "affine":
        return lambda b, x: b.add(b.multiply(x, k(b, alpha or 1.0, x)), k(b, beta or 0.0, x))
    if key == "leakyrelu":
        a = 0.01 if alpha is None else alpha
        return lambda b, x: b.select(b.compare(x, k(b, 0, x), direction="GT"), x,
                                     b.multiply(x, k(b, a, x)))
    if key == "thresholdedrelu":
        a = 1.0 if alpha is None else alpha
        return lambda b, x: b.select(b.compare(x, k(b, a, x), direction="GT"), x, k(b, 0, x))
    if key == "scaledtanh":
        return lambda b, x: b.multiply(b.tanh(b.multiply(x, k(b, beta or 1.0, x))),
                                       k(b, alpha or 1.0, x))
    if key == "hardsigmoid":
        a, c = (0.2 if alpha is None else alpha), (0.5 if beta is None else beta)
        return lambda b, x: b.clamp(k(b, 0, x), b.add(b.multiply(x, k(b, a, x)), k(b, c, x)),
                                    k(b, 1, x))
    if key == "elu":
        a = 1.0 if alpha is None else alpha
        return lambda b, x: b.select(b.compare(x, k(b, 0, x), direction="GT"), x,
                                     b.multiply(b.expm1(x), k(b, a, x)))
    if key == "softsign":
        return lambda b, x: b.divide(x, b.add(b.abs(x), k(b, 1, x)))
    if key == "softplus":
        return lambda b, x: b.log1p(b.exp(x))
    raise ctx.unsupported(f"activation '{name}'")


def _slice(b: Builder, x: Value, dim: int, start: int, stop: int) -> Value:
    starts = [0] * x.type.rank
    limits = list(x.type.shape)
    starts[dim], limits[dim] = start, stop
    return b.slice(x, start_indices=tuple(starts), limit_indices=tuple(limits),
                   strides=(1,) * x.type.rank)


def _gate(b: Builder, v: Value, i: int, h: int) -> Value:
    """Gate `i` (of width h) of a [B, G*H] pre-activation."""
    return _slice(b, v, 1, i * h, (i + 1) * h)


def _dot_t(b: Builder, x: Value, w: Value) -> Value:
    """x [.., K] @ w[N, K]^T -> [.., N]."""
    return b.dot_general(x, w, lhs_contracting_dims=(x.type.rank - 1,),
                         rhs_contracting_dims=(1,))


def _new_function(b: Builder, name: str, types: Sequence[TensorType]) -> tuple[Function,
                                                                                Builder]:
    fn = b.module.add_function(Function(b.module.unique_function_name(name),
                                        [Value(t, f"s{i}") for i, t in enumerate(types)]))
    return fn, Builder(b.module, fn)


def recurrence(b: Builder, xw: Value, states: list[Value], invariants: list[Value],
               cell: Cell, reverse: bool, lens: Value | None, hidden: int
               ) -> tuple[Value, list[Value]]:
    """Run `cell` over the T steps of `xw` [T, B, G*H]: (Y [T, B, H], final states)."""
    steps, batch = xw.type.shape[0], xw.type.shape[1]
    y_type = xw.type.with_shape((steps, batch, hidden))
    extra = [lens] if lens is not None else []
    state = [b.splat(0, I64), *states, b.splat(0, y_type), xw, *extra, *invariants]
    types = [v.type for v in state]
    ns = len(states)

    cond_fn, cb = _new_function(b, "rnn_cond", types)
    cond_fn.results.append(cb.compare(cond_fn.params[0], cb.splat(steps, I64), direction="LT"))

    step_fn, sb = _new_function(b, "rnn_step", types)
    p = step_fn.params
    t, cur, ybuf, xwp = p[0], p[1:1 + ns], p[1 + ns], p[2 + ns]
    lens_p = p[3 + ns] if lens is not None else None
    inv = p[3 + ns + len(extra):]
    zero = sb.splat(0, I64)
    pos = sb.subtract(sb.splat(steps - 1, I64), t) if reverse else t
    x_t = sb.op(ops.dynamic_slice, [xwp, pos, zero, zero],
                {"slice_sizes": (1, batch, xw.type.shape[2])})
    new, h = cell(sb, sb.reshape(x_t, xw.type.shape[1:]), list(cur), list(inv))
    if lens_p is not None:
        live = sb.compare(sb.broadcast_to(pos, (batch,)), lens_p, direction="LT")
        mask = sb.op(ops.broadcast_in_dim, [live], {"shape": (batch, hidden),
                                                  "broadcast_dimensions": (0,)})
        new = [sb.select(mask, n, c) for n, c in zip(new, cur, strict=True)]
        h = sb.select(mask, h, splat_like(sb, 0, h))
    ybuf = sb.op(ops.dynamic_update_slice, [ybuf, sb.reshape(h, (1, batch, hidden)), pos, zero,
                                          zero])
    step_fn.results += [sb.add(t, sb.splat(1, I64)), *new, ybuf, xwp,
                        *([lens_p] if lens_p is not None else []), *inv]
    final = b.ops(ops.while_, state, {"condition": Symbol(cond_fn.name),
                                   "body": Symbol(step_fn.name)})
    return final[1 + ns], list(final[1:1 + ns])


def _direction_slice(b: Builder, v: Value, d: int) -> Value:
    """Entry `d` of a [dirs, ...] parameter, without the dirs dim."""
    return b.reshape(_slice(b, v, 0, d, d + 1), v.type.shape[1:])


@converts("RNN", "GRU", "LSTM")
def convert_recurrent(ctx: NodeContext) -> list[Value]:
    b = ctx.b
    op = ctx.op_type
    x, w, r = ctx.input(0, "X"), ctx.input(1, "W"), ctx.input(2, "R")
    bias, lens, h0 = ctx.optional(3), ctx.optional(4), ctx.optional(5)
    c0 = ctx.optional(6) if op == "LSTM" else None
    peep = ctx.optional(7) if op == "LSTM" else None
    direction = ctx.attr("direction", "forward")
    dirs = 2 if direction == "bidirectional" else 1
    layout = int(ctx.attr("layout", 0))
    hidden = r.type.shape[-1]
    gates = GATES[op]
    if w.type.shape[0] != dirs or w.type.shape[1] != gates * hidden:
        raise ctx.fail(f"W {w.type} does not fit {dirs} direction(s) of {gates} gates of "
                       f"hidden size {hidden}")
    if op == "LSTM" and int(ctx.attr("input_forget", 0)):
        raise ctx.unsupported("input_forget=1")
    _check_shapes(ctx, x, layout, dirs, gates, hidden, r, bias, lens, h0, c0, peep)
    if layout:
        x = b.transpose(x, permutation=(1, 0, 2))
        h0 = None if h0 is None else b.transpose(h0, permutation=(1, 0, 2))
        c0 = None if c0 is None else b.transpose(c0, permutation=(1, 0, 2))
    steps, batch = x.type.shape[0], x.type.shape[1]
    names = list(ctx.attr("activations", []))
    per_dir = len(DEFAULT_ACTS[op])
    if not names:
        names = DEFAULT_ACTS[op] * dirs
    alphas = list(ctx.attr("activation_alpha", []))
    betas = list(ctx.attr("activation_beta", []))
    if len(names) != per_dir * dirs:
        raise ctx.fail(f"activations {names} must name {per_dir} function(s) per direction")
    clip = ctx.attr("clip")
    lbr = int(ctx.attr("linear_before_reset", 0))
    lens_v = None if lens is None else b.convert(lens, DType.S64)
    state_shape = x.type.with_shape((batch, hidden))
    ys, hs, cs = [], [], []
    for d in range(dirs):
        acts = [activation(ctx, names[d * per_dir + i],
                           float(alphas[d * per_dir + i]) if d * per_dir + i < len(alphas)
                           else None,
                           float(betas[d * per_dir + i]) if d * per_dir + i < len(betas)
                           else None)
                for i in range(per_dir)]
        wd, rd = _direction_slice(b, w, d), _direction_slice(b, r, d)
        bd = _direction_slice(b, bias, d) if bias is not None else None
        wb = _slice(b, bd, 0, 0, gates * hidden) if bd is not None else None
        rb = _slice(b, bd, 0, gates * hidden, 2 * gates * hidden) if bd is not None else \
            b.splat(0, x.type.with_shape((gates * hidden,)))
        xw = _dot_t(b, x, wd)
        if wb is not None:
            xw = b.add(xw, b.broadcast_to(wb, xw.type.shape))
        init_h = _direction_slice(b, h0, d) if h0 is not None else b.splat(0, state_shape)
        states = [init_h]
        inv = [rd, rb]
        if op == "LSTM":
            states.append(_direction_slice(b, c0, d) if c0 is not None
                          else b.splat(0, state_shape))
            inv.append(_direction_slice(b, peep, d) if peep is not None
                       else b.splat(0, x.type.with_shape((3 * hidden,))))
        cell = _cell(op, acts, hidden, None if clip is None else float(clip), lbr)
        y, finals = recurrence(b, xw, states, inv, cell, direction == "reverse" or d == 1,
                               lens_v, hidden)
        ys.append(b.reshape(y, (steps, 1, batch, hidden)))
        hs.append(b.reshape(finals[0], (1, batch, hidden)))
        if op == "LSTM":
            cs.append(b.reshape(finals[1], (1, batch, hidden)))
    y = ys[0] if dirs == 1 else b.concatenate(*ys, dimension=1)
    y_h = hs[0] if dirs == 1 else b.concatenate(*hs, dimension=0)
    outs = [y, y_h]
    if op == "LSTM":
        outs.append(cs[0] if dirs == 1 else b.concatenate(*cs, dimension=0))
    if layout:
        outs = [b.transpose(outs[0], permutation=(2, 0, 1, 3)),
                *[b.transpose(v, permutation=(1, 0, 2)) for v in outs[1:]]]
    return outs


def _check_shapes(ctx: NodeContext, x: Value, layout: int, dirs: int, gates: int,
                  hidden: int, r: Value, bias: Value | None, lens: Value | None,
                  h0: Value | None, c0: Value | None, peep: Value | None) -> None:
    """Each input's shape as the ONNX spec gives it for X's batch, the directions and
    `hidden` (R's last dimension): a model that breaks it is refused naming the input, as
    onnxruntime refuses it, not somewhere inside the loop."""
    if x.type.rank != 3:
        raise ctx.fail(f"X must be 3-D, got {x.type}")
    batch = x.type.shape[0 if layout else 1]
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    expected = [("R", r, (dirs, gates * hidden, hidden)), ("B", bias, (dirs, 2 * gates * hidden)),
                ("sequence_lens", lens, (batch,)), ("initial_h", h0, state),
                ("initial_c", c0, state), ("P", peep, (dirs, 3 * hidden))]
    for name, v, shape in expected:
        if v is not None and v.type.shape != shape:
            raise ctx.fail(f"input {name} must have shape {list(shape)} (hidden_size "
                           f"{hidden}), got {list(v.type.shape)}")


def _cell(op: str, acts: list[Act], hidden: int, clip: float | None, lbr: int) -> Cell:
    """The step function of `op`: (x projection, states, [R, Rb(, P)]) -> (states, h)."""

    def pre(b: Builder, v: Value) -> Value:
        if clip is None:
            return v
        return b.clamp(splat_like(b, -clip, v), v, splat_like(b, clip, v))

    def recur(b: Builder, h: Value, r: Value, rb: Value) -> Value:
        out = _dot_t(b, h, r)
        return b.add(out, b.broadcast_to(rb, out.type.shape))

    def rnn(b: Builder, xw: Value, states: list[Value], inv: list[Value]
            ) -> tuple[list[Value], Value]:
        h = acts[0](b, pre(b, b.add(xw, recur(b, states[0], inv[0], inv[1]))))
        return [h], h

    def gru(b: Builder, xw: Value, states: list[Value], inv: list[Value]
            ) -> tuple[list[Value], Value]:
        h_prev, r, rb = states[0], inv[0], inv[1]
        f, g = acts
        rz, rr, rh = (_slice(b, r, 0, i * hidden, (i + 1) * hidden) for i in range(3))
        bz, br, bh = (_slice(b, rb, 0, i * hidden, (i + 1) * hidden) for i in range(3))
        z = f(b, pre(b, b.add(_gate(b, xw, 0, hidden), recur(b, h_prev, rz, bz))))
        rt = f(b, pre(b, b.add(_gate(b, xw, 1, hidden), recur(b, h_prev, rr, br))))
        if lbr:
            hh = b.multiply(rt, recur(b, h_prev, rh, bh))
        else:
            hh = recur(b, b.multiply(rt, h_prev), rh, bh)
        ht = g(b, pre(b, b.add(_gate(b, xw, 2, hidden), hh)))
        one = splat_like(b, 1, z)
        h = b.add(b.multiply(b.subtract(one, z), ht), b.multiply(z, h_prev))
        return [h], h

    def lstm(b: Builder, xw: Value, states: list[Value], inv: list[Value]
             ) -> tuple[list[Value], Value]:
        h_prev, c_prev = states
        r, rb, p = inv
        f, g, hact = acts
        gates = b.add(xw, recur(b, h_prev, r, rb))
        pi, po, pf = (b.broadcast_to(_slice(b, p, 0, i * hidden, (i + 1) * hidden),
                                     c_prev.type.shape) for i in range(3))
        i_t = f(b, pre(b, b.add(_gate(b, gates, 0, hidden), b.multiply(pi, c_prev))))
        f_t = f(b, pre(b, b.add(_gate(b, gates, 2, hidden), b.multiply(pf, c_prev))))
        c_t = g(b, pre(b, _gate(b, gates, 3, hidden)))
        c = b.add(b.multiply(f_t, c_prev), b.multiply(i_t, c_t))
        o_t = f(b, pre(b, b.add(_gate(b, gates, 1, hidden), b.multiply(po, c))))
        h = b.multiply(o_t, hact(b, c))
        return [h, c], h

    return {"RNN": rnn, "GRU": gru, "LSTM": lstm}[op]
