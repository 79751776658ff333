"""Conv and ConvTranspose as core ``convolution`` ops (NCHW, 1-D to 3-D), and the window
geometry (kernel, strides, dilations, explicit and automatic padding) pooling shares."""

from __future__ import annotations

from dataclasses import dataclass

from nxcc.compiler.onnx.context import NodeContext, broadcast_along
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.core import Value


@dataclass
class Window:
    """A window over the spatial dims: per-dim sizes, and (begin, end) padding."""

    kernel: list[int]
    strides: list[int]
    dilations: list[int]
    pads: list[tuple[int, int]]

    def extent(self, i: int) -> int:
        """The dilated kernel size along spatial dim `i`."""
        return (self.kernel[i] - 1) * self.dilations[i] + 1


def _ints(ctx: NodeContext, key: str, n: int, default: int) -> list[int]:
    values = [int(v) for v in ctx.attr(key, [default] * n)]
    if len(values) != n:
        raise ctx.fail(f"attribute '{key}' has {len(values)} entries, expected {n}")
    if any(v < 1 for v in values):
        raise ctx.fail(f"attribute '{key}' must be positive, got {values}")
    return values


def window(ctx: NodeContext, spatial: tuple[int, ...], kernel: list[int]) -> Window:
    """Kernel, strides, dilations and padding of a Conv/pool node over `spatial` sizes.

    auto_pad SAME_UPPER/SAME_LOWER pad so that out = ceil(in / stride), the odd unit at the
    end (UPPER) or the beginning (LOWER); VALID pads nothing; NOTSET uses `pads`
    ([x1_begin, x2_begin, ..., x1_end, x2_end, ...]).
    """
    n = len(spatial)
    if len(kernel) != n:
        raise ctx.fail(f"kernel_shape {kernel} does not match {n} spatial dimensions")
    strides = _ints(ctx, "strides", n, 1)
    dilations = _ints(ctx, "dilations", n, 1)
    auto_pad = ctx.attr("auto_pad", "NOTSET") or "NOTSET"
    geom = Window(kernel, strides, dilations, [(0, 0)] * n)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        for i, size in enumerate(spatial):
            out = -(-size // strides[i])
            total = max((out - 1) * strides[i] + geom.extent(i) - size, 0)
            small, big = total // 2, total - total // 2
            geom.pads[i] = (small, big) if auto_pad == "SAME_UPPER" else (big, small)
    elif auto_pad == "NOTSET":
        pads = [int(p) for p in ctx.attr("pads", [0] * 2 * n)]
        if len(pads) != 2 * n:
            raise ctx.fail(f"pads {pads} must have {2 * n} entries")
        geom.pads = [(pads[i], pads[i + n]) for i in range(n)]
    elif auto_pad != "VALID":
        raise ctx.unsupported(f"auto_pad '{auto_pad}'")
    return geom


def _spatial_input(ctx: NodeContext, x: Value) -> int:
    """The number of spatial dims of NC... input `x`."""
    if x.type.rank < 3:
        raise ctx.fail(f"input must be N x C x D1 x ..., got {x.type}")
    return x.type.rank - 2


def _dimension_numbers(n: int, kernel_in: int = 1, kernel_out: int = 0) -> dict[str, object]:
    spatial = tuple(range(2, n + 2))
    return {
        "input_batch_dim": 0, "input_feature_dim": 1, "input_spatial_dims": spatial,
        "kernel_input_feature_dim": kernel_in, "kernel_output_feature_dim": kernel_out,
        "kernel_spatial_dims": spatial,
        "output_batch_dim": 0, "output_feature_dim": 1, "output_spatial_dims": spatial,
    }


def _add_bias(ctx: NodeContext, out: Value, index: int) -> Value:
    bias = ctx.optional(index)
    if bias is None:
        return out
    if bias.type.shape != (out.type.shape[1],):
        raise ctx.fail(f"bias {bias.type} must have one value per output channel of {out.type}")
    return ctx.b.add(out, broadcast_along(ctx.b, bias, out.type.shape, 1))


@converts("Conv")
def convert_conv(ctx: NodeContext) -> list[Value]:
    """Conv(X [N, C, D...], W [M, C/group, k...], B [M]) -> convolution (+ bias)."""
    return [_add_bias(ctx, conv(ctx, ctx.input(0, "X"), ctx.input(1, "W")), 2)]


def conv(ctx: NodeContext, x: Value, w: Value) -> Value:
    """The convolution of `x` by `w` with the node's Conv attributes (no bias)."""
    b = ctx.b
    n = _spatial_input(ctx, x)
    if w.type.rank != n + 2:
        raise ctx.fail(f"weights {w.type} must have rank {n + 2} for input {x.type}")
    kernel = [int(k) for k in ctx.attr("kernel_shape", w.type.shape[2:])]
    if tuple(kernel) != w.type.shape[2:]:
        raise ctx.fail(f"kernel_shape {kernel} does not match the weights {w.type}")
    geom = window(ctx, x.type.shape[2:], kernel)
    out = b.op(ops.convolution, [x, w], {
        "window_strides": tuple(geom.strides), "padding": tuple(geom.pads),
        "lhs_dilation": (1,) * n, "rhs_dilation": tuple(geom.dilations),
        "feature_group_count": int(ctx.attr("group", 1)), **_dimension_numbers(n)})
    return out


@converts("ConvTranspose")
def convert_conv_transpose(ctx: NodeContext) -> list[Value]:
    """ConvTranspose(X [N, C, D...], W [C, M/group, k...], B [M]) as a convolution of the
    input dilated by the strides with the spatially reversed kernel, padded by
    (k - 1) * d - pad_begin before and (k - 1) * d - pad_end + output_padding after."""
    b, x, w = ctx.b, ctx.input(0, "X"), ctx.input(1, "W")
    n = _spatial_input(ctx, x)
    group = int(ctx.attr("group", 1))
    c = x.type.shape[1]
    if w.type.rank != n + 2 or w.type.shape[0] != c or c % group:
        raise ctx.fail(f"weights {w.type} do not fit input {x.type} with group {group}")
    kernel = [int(k) for k in ctx.attr("kernel_shape", w.type.shape[2:])]
    strides = _ints(ctx, "strides", n, 1)
    dilations = _ints(ctx, "dilations", n, 1)
    out_pad = [int(p) for p in ctx.attr("output_padding", [0] * n)]
    spatial = x.type.shape[2:]
    extent = [(kernel[i] - 1) * dilations[i] + 1 for i in range(n)]
    auto_pad = ctx.attr("auto_pad", "NOTSET") or "NOTSET"
    output_shape = ctx.attr("output_shape")
    if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if output_shape is not None:
            target = [int(s) for s in output_shape][-n:]
        else:
            target = [spatial[i] * strides[i] for i in range(n)]
        pads = []
        for i in range(n):
            total = strides[i] * (spatial[i] - 1) + out_pad[i] + extent[i] - target[i]
            if total < 0:  # a larger output_shape: the extra goes at the end
                pads.append((0, total))
                continue
            head = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
            pads.append((head, total - head))
    elif auto_pad == "VALID":
        pads = [(0, 0)] * n
    elif auto_pad == "NOTSET":
        flat = [int(p) for p in ctx.attr("pads", [0] * 2 * n)]
        pads = [(flat[i], flat[i + n]) for i in range(n)]
    else:
        raise ctx.unsupported(f"auto_pad '{auto_pad}'")
    m_per_group = w.type.shape[1]
    spatial_dims = tuple(range(2, n + 2))
    kernel_w = b.reverse(w, dimensions=spatial_dims)
    if group > 1:  # [C, M/g, k...] -> [g, C/g, M/g, k...] -> [g, M/g, C/g, k...] -> [M, C/g, k...]
        ks = w.type.shape[2:]
        kernel_w = b.reshape(kernel_w, (group, c // group, m_per_group, *ks))
        kernel_w = b.transpose(kernel_w, permutation=(0, 2, 1, *range(3, n + 3)))
        kernel_w = b.reshape(kernel_w, (group * m_per_group, c // group, *ks))
        numbers = _dimension_numbers(n)
    else:
        numbers = _dimension_numbers(n, kernel_in=0, kernel_out=1)
    padding = tuple((extent[i] - 1 - pads[i][0], extent[i] - 1 - pads[i][1] + out_pad[i])
                    for i in range(n))
    if any(lo < 0 or hi < 0 for lo, hi in padding):
        raise ctx.unsupported(f"padding larger than the kernel extent (pads {pads})")
    out = b.op(ops.convolution, [x, kernel_w], {
        "window_strides": (1,) * n, "padding": padding, "lhs_dilation": tuple(strides),
        "rhs_dilation": tuple(dilations), "feature_group_count": group, **numbers})
    if output_shape is not None and list(out.type.shape[2:]) != target:
        raise ctx.fail(f"output_shape {list(output_shape)} is not reachable (got {out.type})")
    return [_add_bias(ctx, out, 2)]
