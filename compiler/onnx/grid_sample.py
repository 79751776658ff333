"""GridSample (opsets 16-22): sampling X at the normalized grid positions, as gathers.

For each spatial dim the grid coordinate (the grid's last axis lists them x first, i.e.
innermost dim first) is denormalized (align_corners: [-1, 1] -> [0, d - 1]; otherwise
[-0.5, d - 0.5]), rounded half to even for nearest, and brought inside the borders per
padding_mode (border clamps, reflection folds back). Each tap (1 nearest, 2 linear and 4
cubic per dim) reads X at a flat index of the whole tensor with one gather; zeros padding
masks taps outside the input, border clamps them and reflection reflects them, as the ONNX
reference implementation does. The taps' weights multiply across dims.
"""

from __future__ import annotations

import itertools

from nxcc.compiler.onnx.context import NodeContext, float_type_of, splat_like
from nxcc.compiler.onnx.indexing import take
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType

MODES = {"bilinear": "linear", "linear": "linear", "nearest": "nearest",
         "bicubic": "cubic", "cubic": "cubic"}
CUBIC_A = -0.75


def _k(b: Builder, v: float, like: Value) -> Value:
    return splat_like(b, v, like)


def reflect(b: Builder, x: Value, lo: float, hi: float) -> Value:
    """`x` folded back into [lo, hi] by reflecting at the borders (repeatedly)."""
    rng = hi - lo
    if rng <= 0:
        return b.select(b.compare(x, x, direction="EQ"), _k(b, lo, x), x)
    below = b.compare(x, _k(b, lo, x), direction="LT")
    above = b.compare(x, _k(b, hi, x), direction="GT")
    dx = b.select(below, b.subtract(_k(b, lo, x), x), b.subtract(x, _k(b, hi, x)))
    n = b.floor(b.divide(dx, _k(b, rng, x)))
    r = b.subtract(dx, b.multiply(n, _k(b, rng, x)))
    even = b.compare(b.remainder(n, _k(b, 2, x)), _k(b, 0, x), direction="EQ")
    from_lo, from_hi = b.add(_k(b, lo, x), r), b.subtract(_k(b, hi, x), r)
    low_side = b.select(even, from_lo, from_hi)
    high_side = b.select(even, from_hi, from_lo)
    return b.select(below, low_side, b.select(above, high_side, x))


def _cubic_weights(b: Builder, t: Value) -> list[Value]:
    """Keys' cubic weights of the taps at -1, 0, 1, 2 for fraction `t`."""
    a = CUBIC_A

    def near(s: Value) -> Value:  # |s| <= 1
        return b.add(b.multiply(b.multiply(b.subtract(b.multiply(_k(b, a + 2, s), s),
                                                      _k(b, a + 3, s)), s), s), _k(b, 1, s))

    def far(s: Value) -> Value:  # 1 < |s| < 2
        inner = b.add(b.multiply(b.subtract(b.multiply(_k(b, a, s), s), _k(b, 5 * a, s)), s),
                      _k(b, 8 * a, s))
        return b.subtract(b.multiply(inner, s), _k(b, 4 * a, s))

    one, two = _k(b, 1, t), _k(b, 2, t)
    return [far(b.add(t, one)), near(t), near(b.subtract(one, t)), far(b.subtract(two, t))]


@converts("GridSample")
def convert_grid_sample(ctx: NodeContext) -> list[Value]:
    b, x, grid = ctx.b, ctx.input(0, "X"), ctx.input(1, "grid")
    dtype = float_type_of(ctx, x)
    spatial = x.type.shape[2:]
    r = len(spatial)
    n, c = x.type.shape[:2]
    if r < 1 or grid.type.rank != r + 2 or grid.type.shape[-1] != r or grid.type.shape[0] != n:
        raise ctx.fail(f"grid {grid.type} does not fit X {x.type}")
    mode, padding, align = _sampling(ctx)
    out_shape = (n, c, *grid.type.shape[1:-1])
    g = b.convert(grid, DType.F32)
    taps: list[list[tuple[Value, Value | None]]] = []  # per dim: (index float, weight)
    for i, d in enumerate(spatial):
        pos = _grid_position(b, g, r - 1 - i, d, out_shape, align)  # innermost dim first
        taps.append(_dim_taps(b, _inside(b, pos, d, mode, padding, align), mode))
    flat_x = b.reshape(x, (x.type.size,))
    nc = b.add(b.multiply(b.iota(dtype=DType.S64, shape=out_shape, dimension=0),
                          b.splat(c, _s64(out_shape))),
               b.iota(dtype=DType.S64, shape=out_shape, dimension=1))
    acc = None
    for combo in itertools.product(*taps):
        val = _tap_value(b, flat_x, nc, combo, spatial, padding, align)
        acc = val if acc is None else b.add(acc, val)
    assert acc is not None
    return [b.convert(acc, dtype)]


def _sampling(ctx: NodeContext) -> tuple[str, str, bool]:
    """The node's interpolation mode (nearest, linear or cubic), padding_mode and
    align_corners; unsupported for a mode or padding nxcc does not know."""
    mode = MODES.get(str(ctx.attr("mode", "linear" if ctx.opset >= 20 else "bilinear")))
    padding = str(ctx.attr("padding_mode", "zeros"))
    if mode is None or padding not in ("zeros", "border", "reflection"):
        raise ctx.unsupported(f"mode '{ctx.attr('mode')}' with padding_mode '{padding}'")
    return mode, padding, bool(ctx.attr("align_corners", 0))


def _grid_position(b: Builder, g: Value, k: int, d: int, out_shape: tuple[int, ...],
                   align: bool) -> Value:
    """Component `k` of the f32 grid `g`, broadcast to `out_shape` and denormalized to a
    position along a dim of size `d`."""
    n, out_spatial = out_shape[0], out_shape[2:]
    comp = b.slice(g, start_indices=(0, *(0,) * len(out_spatial), k),
                   limit_indices=(n, *out_spatial, k + 1), strides=(1,) * g.type.rank)
    comp = b.op(ops.broadcast_in_dim, [b.reshape(comp, (n, *out_spatial))], {
        "shape": out_shape, "broadcast_dimensions": (0, *range(2, 2 + len(out_spatial)))})
    if align:
        return b.multiply(b.add(comp, _k(b, 1, comp)), _k(b, (d - 1) / 2.0, comp))
    return b.divide(b.subtract(b.multiply(b.add(comp, _k(b, 1, comp)), _k(b, d, comp)),
                               _k(b, 1, comp)), _k(b, 2, comp))


def _inside(b: Builder, pos: Value, d: int, mode: str, padding: str, align: bool) -> Value:
    """`pos` rounded for nearest, then brought inside the borders as `padding` says."""
    if mode == "nearest":
        pos = b.round_even(pos)
    if padding == "border":
        return b.clamp(_k(b, 0, pos), pos, _k(b, d - 1, pos))
    if padding == "reflection":
        lo, hi = (0.0, d - 1.0) if align else (-0.5, d - 0.5)
        return reflect(b, pos, lo, hi)
    return pos


def _dim_taps(b: Builder, pos: Value, mode: str) -> list[tuple[Value, Value | None]]:
    """The taps of one dim at position `pos`: (float index, weight, None for nearest)."""
    if mode == "nearest":
        return [(pos, None)]
    base = b.floor(pos)
    t = b.subtract(pos, base)
    if mode == "linear":
        return [(base, b.subtract(_k(b, 1, t), t)), (b.add(base, _k(b, 1, t)), t)]
    weights = _cubic_weights(b, t)
    return [(b.add(base, _k(b, j - 1, base)), w) for j, w in enumerate(weights)]


def _tap_value(b: Builder, flat_x: Value, nc: Value, combo: tuple[tuple[Value, Value | None],
               ...], spatial: tuple[int, ...], padding: str, align: bool) -> Value:
    """X read at one tap per dim (`combo`), as f32, weighted and masked: `nc` is the flat
    index of each output's (batch, channel) block in `flat_x`."""
    flat = nc
    valid = None
    weight = None
    for i, (pos, w) in enumerate(combo):
        d = spatial[i]
        idx, ok = _tap_index(b, pos, d, padding, align)
        flat = b.add(b.multiply(flat, b.splat(d, flat.type)), idx)
        if ok is not None:
            valid = ok if valid is None else b.op(ops.and_, [valid, ok])
        if w is not None:
            weight = w if weight is None else b.multiply(weight, w)
    val = b.convert(take(b, flat_x, flat, 0), DType.F32)
    if weight is not None:
        val = b.multiply(val, weight)
    if valid is not None:
        val = b.select(valid, val, _k(b, 0, val))
    return val


def _s64(shape: tuple[int, ...]) -> TensorType:
    return TensorType(DType.S64, shape)


def _tap_index(b: Builder, pos: Value, d: int, padding: str, align: bool
               ) -> tuple[Value, Value | None]:
    """(in-range s64 index, validity mask or None) of the tap at float position `pos`."""
    if padding == "reflection":
        lo, hi = (0.0, d - 1.0) if align else (-0.5, d - 0.5)
        pos = reflect(b, pos, lo, hi)
    idx = b.convert(pos, DType.S64)  # truncation toward zero, as int()
    low, high = b.splat(0, idx.type), b.splat(d - 1, idx.type)
    clamped = b.clamp(low, idx, high)
    if padding == "zeros":
        ok = b.op(ops.and_, [b.compare(pos, _k(b, 0, pos), direction="GE"),
                          b.compare(pos, _k(b, d, pos), direction="LT")])
        return clamped, ok
    return clamped, None

