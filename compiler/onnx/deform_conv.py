"""DeformConv (2-D): a convolution whose kernel taps sample the input at learned offsets.

Each tap (i, j) of output position (y, x) reads X bilinearly at (y * stride - pad + i *
dilation + offset_h, x * stride - pad + j * dilation + offset_w), corners outside the
input counting 0 (GridSample with align_corners and zeros padding, as the ONNX reference),
times the optional mask. The samples of all taps form im2col columns [N, C, kh, kw, oh,
ow] (four gathers from the flattened input), contracted with the weights per group by one
dot_general; the bias is added last.
"""

from __future__ import annotations

from nxcc.compiler.onnx.context import NodeContext, float_type_of, splat_like
from nxcc.compiler.onnx.indexing import take
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType


def _ints(ctx: NodeContext, key: str, default: list[int]) -> list[int]:
    return [int(v) for v in ctx.attr(key, default)]


def _per_channel(b: Builder, v: Value, shape: tuple[int, ...], groups: int) -> Value:
    """[N, G, kh, kw, oh, ow] -> [N, C, kh, kw, oh, ow] (offset group of each channel)."""
    n, c = shape[:2]
    wide = (n, groups, c // groups, *shape[2:])
    v = b.op(ops.broadcast_in_dim, [v], {"shape": wide, "broadcast_dimensions": (0, 1, 3, 4, 5, 6)})
    return b.reshape(v, shape)


@converts("DeformConv")
def convert_deform_conv(ctx: NodeContext) -> list[Value]:
    b = ctx.b
    x, w, offset = ctx.input(0, "X"), ctx.input(1, "W"), ctx.input(2, "offset")
    bias, mask = ctx.optional(3), ctx.optional(4)
    dtype = float_type_of(ctx, x)
    if x.type.rank != 4:
        raise ctx.unsupported(f"a {x.type.rank - 2}-D DeformConv (only 2-D)")
    n, c, ih, iw = x.type.shape
    oc, cg, kh, kw = w.type.shape
    group, og = int(ctx.attr("group", 1)), int(ctx.attr("offset_group", 1))
    oh, ow = offset.type.shape[2:]
    sth, stw = _ints(ctx, "strides", [1, 1])
    dh, dw = _ints(ctx, "dilations", [1, 1])
    pads = _ints(ctx, "pads", [0, 0, 0, 0])
    if c != cg * group or oc % group or c % og or offset.type.shape[1] != og * kh * kw * 2:
        raise ctx.fail(f"X {x.type}, W {w.type} and offset {offset.type} do not fit group "
                       f"{group} and offset_group {og}")
    taps = (n, og, kh, kw, oh, ow)
    full = (n, c, kh, kw, oh, ow)
    f32 = TensorType(DType.F32, taps)
    off = b.reshape(b.convert(offset, DType.F32), (n, og, kh, kw, 2, oh, ow))

    def component(k: int) -> Value:
        part = b.slice(off, start_indices=(0, 0, 0, 0, k, 0, 0),
                       limit_indices=(n, og, kh, kw, k + 1, oh, ow), strides=(1,) * 7)
        return b.reshape(part, taps)

    def grid(dim_out: int, dim_k: int, stride: int, dil: int, pad: int) -> Value:
        o = b.convert(b.iota(dtype=DType.S64, shape=taps, dimension=dim_out), DType.F32)
        k = b.convert(b.iota(dtype=DType.S64, shape=taps, dimension=dim_k), DType.F32)
        return b.add(b.multiply(o, b.splat(float(stride), f32)),
                     b.subtract(b.multiply(k, b.splat(float(dil), f32)),
                                b.splat(float(pad), f32)))

    pos_h = _per_channel(b, b.add(grid(4, 2, sth, dh, pads[0]), component(0)), full, og)
    pos_w = _per_channel(b, b.add(grid(5, 3, stw, dw, pads[1]), component(1)), full, og)
    chan = b.add(b.multiply(b.iota(dtype=DType.S64, shape=full, dimension=0),
                            b.splat(c, TensorType(DType.S64, full))),
                 b.iota(dtype=DType.S64, shape=full, dimension=1))
    flat_x = b.convert(b.reshape(x, (x.type.size,)), DType.F32)
    h0, w0 = b.floor(pos_h), b.floor(pos_w)
    fh, fw = b.subtract(pos_h, h0), b.subtract(pos_w, w0)
    cols = None
    for dy, wy in ((0, b.subtract(splat_like(b, 1, fh), fh)), (1, fh)):
        for dx, wx in ((0, b.subtract(splat_like(b, 1, fw), fw)), (1, fw)):
            hh = b.add(h0, splat_like(b, dy, h0))
            ww = b.add(w0, splat_like(b, dx, w0))
            ok = b.op(ops.and_, [
                b.op(ops.and_, [b.compare(hh, splat_like(b, 0, hh), direction="GE"),
                             b.compare(hh, splat_like(b, ih - 1, hh), direction="LE")]),
                b.op(ops.and_, [b.compare(ww, splat_like(b, 0, ww), direction="GE"),
                             b.compare(ww, splat_like(b, iw - 1, ww), direction="LE")])])
            hi = b.clamp(b.splat(0, chan.type), b.convert(hh, DType.S64),
                         b.splat(ih - 1, chan.type))
            wi = b.clamp(b.splat(0, chan.type), b.convert(ww, DType.S64),
                         b.splat(iw - 1, chan.type))
            idx = b.add(b.multiply(b.add(b.multiply(chan, b.splat(ih, chan.type)), hi),
                                   b.splat(iw, chan.type)), wi)
            val = b.multiply(b.multiply(wy, wx), take(b, flat_x, idx, 0))
            val = b.select(ok, val, splat_like(b, 0, val))
            cols = val if cols is None else b.add(cols, val)
    assert cols is not None
    if mask is not None:
        m = b.reshape(b.convert(mask, DType.F32), taps)
        cols = b.multiply(cols, _per_channel(b, m, full, og))
    p = oh * ow
    cols = b.reshape(cols, (n, group, cg, kh * kw, p))
    cols = b.transpose(cols, permutation=(1, 0, 2, 3, 4))          # [g, N, cg, kk, P]
    wg = b.reshape(b.convert(w, DType.F32), (group, oc // group, cg, kh * kw))
    out = b.dot_general(wg, cols, lhs_batch_dims=(0,), rhs_batch_dims=(0,),
                        lhs_contracting_dims=(2, 3), rhs_contracting_dims=(2, 3))
    out = b.transpose(out, permutation=(2, 0, 1, 3))                # [N, g, ocg, P]
    out = b.reshape(out, (n, oc, oh, ow))
    if bias is not None:
        out = b.add(out, b.op(ops.broadcast_in_dim, [b.convert(bias, DType.F32)], {
            "shape": out.type.shape, "broadcast_dimensions": (1,)}))
    return [b.convert(out, dtype)]
