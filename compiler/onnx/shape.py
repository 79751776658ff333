"""Shape manipulation and shape-valued operators: Constant, Identity, Dropout, Reshape,
Flatten, Transpose, Squeeze, Unsqueeze, Concat, Shape, Size, Expand, ConstantOfShape,
Range, EyeLike.

Operators whose result shape depends on an input's value (Reshape's shape, Expand's
shape...) need that input at compile time; the importer folds constant subgraphs so
``Shape -> Gather -> Concat -> Reshape`` chains qualify.
"""

from __future__ import annotations

import math

import numpy as np

from nxcc.compiler.onnx.context import NodeContext, broadcast_shapes
from nxcc.compiler.onnx.dtypes import to_ir_dtype
from nxcc.compiler.onnx.errors import UNSUPPORTED_DTYPE
from nxcc.compiler.onnx.random import node_key, uniform01
from nxcc.compiler.onnx.registry import converts
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType


def _constant(ctx: NodeContext, array: object) -> Value:
    arr = np.asarray(array)
    try:
        dtype = DType.from_numpy(arr.dtype)
    except ValueError:
        raise ctx.fail(f"constant of type {arr.dtype} is not supported",
                       UNSUPPORTED_DTYPE) from None
    return ctx.b.constant(arr, dtype)


@converts("Constant")
def convert_constant(ctx: NodeContext) -> list[Value]:
    """The value from whichever of value / value_float(s) / value_int(s) / sparse_value."""
    import onnx

    attrs = ctx.attrs
    if "value" in attrs:
        return [_constant(ctx, attrs["value"])]
    if "value_float" in attrs:
        return [_constant(ctx, np.float32(attrs["value_float"]))]
    if "value_floats" in attrs:
        return [_constant(ctx, np.array(attrs["value_floats"], np.float32))]
    if "value_int" in attrs:
        return [_constant(ctx, np.int64(attrs["value_int"]))]
    if "value_ints" in attrs:
        return [_constant(ctx, np.array(attrs["value_ints"], np.int64))]
    sparse = attrs.get("sparse_value")
    if isinstance(sparse, onnx.SparseTensorProto):
        values = onnx.numpy_helper.to_array(sparse.values)
        dense = np.zeros(tuple(sparse.dims), values.dtype)
        idx = onnx.numpy_helper.to_array(sparse.indices)
        if idx.ndim == 1:
            dense.reshape(-1)[idx] = values
        else:
            dense[tuple(idx.T)] = values
        return [_constant(ctx, dense)]
    raise ctx.fail("string constants are not supported", UNSUPPORTED_DTYPE)


@converts("Identity")
def convert_identity(ctx: NodeContext) -> list[Value]:
    return [ctx.input(0)]


@converts("Dropout")
def convert_dropout(ctx: NodeContext) -> list[Value]:
    """Inference (or training with ratio 0): the identity, and an all-true mask when asked
    for. In training mode with a ratio r > 0 (both known at compile time) each element is
    kept with probability 1 - r (a uniform draw >= r, `random.uniform01`) and scaled by
    1 / (1 - r); the mask output says which were kept."""
    x = ctx.input(0)
    training = ctx.optional(2) is not None and bool(
        ctx.const_input(2, "training_mode").reshape(-1)[0])
    if training:
        ratio = float(ctx.attr("ratio", 0.5)) if ctx.opset < 12 else (
            float(ctx.const_input(1, "ratio").reshape(-1)[0]) if ctx.optional(1) is not None
            else 0.5)
        if ratio != 0.0:
            return _dropout(ctx, x, ratio)
    outs = [x]
    if ctx.output_used(1):
        outs.append(ctx.b.splat(True, x.type.with_dtype(DType.PRED)))
    return outs


def reshape_target(ctx: NodeContext, x: Value, shape: list[int], allowzero: bool
                   ) -> tuple[int, ...]:
    """ONNX Reshape's target: 0 copies the input dim (unless allowzero), -1 is inferred."""
    out = []
    for i, d in enumerate(shape):
        if d == 0 and not allowzero:
            if i >= x.type.rank:
                raise ctx.fail(f"shape {shape}: 0 at position {i} has no input dim to copy")
            d = x.type.shape[i]
        elif d < -1:
            raise ctx.fail(f"shape {shape} has a negative size {d}")
        out.append(d)
    if out.count(-1) > 1:
        raise ctx.fail(f"shape {shape} has more than one -1")
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        if known == 0 or x.type.size % known:
            raise ctx.fail(f"cannot reshape {x.type} to {shape}")
        out[out.index(-1)] = x.type.size // known
    if math.prod(out) != x.type.size:
        raise ctx.fail(f"cannot reshape {x.type} ({x.type.size} elements) to {shape}")
    return tuple(out)


@converts("Reshape")
def convert_reshape(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    shape = [int(d) for d in ctx.const_input(1, "shape").reshape(-1)]
    target = reshape_target(ctx, x, shape, bool(ctx.attr("allowzero", 0)))
    return [ctx.b.reshape(x, target)]


@converts("Flatten")
def convert_flatten(ctx: NodeContext) -> list[Value]:
    """[prod(shape[:axis]), prod(shape[axis:])], axis in [-rank, rank] (default 1)."""
    x = ctx.input(0)
    rank = x.type.rank
    axis = int(ctx.attr("axis", 1))
    if not -rank <= axis <= rank:
        raise ctx.fail(f"axis {axis} is out of range for rank {rank}")
    axis = axis + rank if axis < 0 else axis
    lead = math.prod(x.type.shape[:axis])
    return [ctx.b.reshape(x, (lead, math.prod(x.type.shape[axis:])))]


@converts("Transpose")
def convert_transpose(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    perm = ctx.attr("perm")
    perm = list(range(x.type.rank))[::-1] if perm is None else [int(p) for p in perm]
    if perm == list(range(x.type.rank)):
        return [x]
    return [ctx.b.transpose(x, permutation=tuple(perm))]


def _axes_arg(ctx: NodeContext) -> list[int] | None:
    """Squeeze/Unsqueeze axes: an attribute before opset 13, an input since."""
    if ctx.opset >= 13:
        return ctx.ints_input(1, "axes")
    axes = ctx.attr("axes")
    return None if axes is None else [int(a) for a in axes]


@converts("Squeeze")
def convert_squeeze(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    shape = x.type.shape
    axes = _axes_arg(ctx)
    if axes is None:
        dims = [d for d, n in enumerate(shape) if n == 1]
    else:
        dims = ctx.axes(axes, x.type.rank)
        for d in dims:
            if shape[d] != 1:
                raise ctx.fail(f"cannot squeeze dimension {d} of size {shape[d]} in {x.type}")
    return [ctx.b.reshape(x, [n for d, n in enumerate(shape) if d not in dims])]


@converts("Unsqueeze")
def convert_unsqueeze(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    axes = _axes_arg(ctx)
    if axes is None:
        raise ctx.fail("needs axes")
    rank = x.type.rank + len(axes)
    dims = set(ctx.axes(axes, rank))
    rest = iter(x.type.shape)
    return [ctx.b.reshape(x, [1 if d in dims else next(rest) for d in range(rank)])]


@converts("Concat")
def convert_concat(ctx: NodeContext) -> list[Value]:
    values = [ctx.input(i) for i in range(len(ctx.inputs))]
    if not values:
        raise ctx.fail("needs at least one input")
    axis = ctx.axis(int(ctx.attr("axis", 0)), values[0].type.rank)
    if len(values) == 1:
        return values
    return [ctx.b.concatenate(*values, dimension=axis)]


@converts("Shape")
def convert_shape(ctx: NodeContext) -> list[Value]:
    """The (static) shape as an s64 constant; start/end (opset 15) slice it."""
    shape = list(ctx.input(0).type.shape)
    start, end = int(ctx.attr("start", 0)), ctx.attr("end")
    dims = shape[start:] if end is None else shape[start:int(end)]
    return [ctx.b.constant(np.array(dims, np.int64))]


@converts("Size")
def convert_size(ctx: NodeContext) -> list[Value]:
    return [ctx.b.constant(np.array(ctx.input(0).type.size, np.int64))]


@converts("Expand")
def convert_expand(ctx: NodeContext) -> list[Value]:
    """Broadcast to np.broadcast_shapes(x.shape, shape) (bidirectional, as ONNX has it)."""
    x = ctx.input(0)
    shape = [int(d) for d in ctx.const_input(1, "shape").reshape(-1)]
    target = broadcast_shapes(ctx, x.type.shape, shape)
    return [ctx.b.broadcast_to(x, target)]


@converts("ConstantOfShape")
def convert_constant_of_shape(ctx: NodeContext) -> list[Value]:
    shape = tuple(int(d) for d in ctx.const_input(0, "input").reshape(-1))
    value = ctx.attr("value")
    arr = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
    try:
        dtype = DType.from_numpy(arr.dtype)
    except ValueError:
        raise ctx.fail(f"value of type {arr.dtype} is not supported", UNSUPPORTED_DTYPE) from None
    return [ctx.b.splat(arr[0].item(), TensorType(dtype, shape))]


@converts("Range")
def convert_range(ctx: NodeContext) -> list[Value]:
    """start, start + delta, ... up to limit (exclusive); all three known at compile time."""
    start = ctx.const_input(0, "start").reshape(())
    limit = ctx.const_input(1, "limit").reshape(())
    delta = ctx.const_input(2, "delta").reshape(())
    if delta == 0:
        raise ctx.fail("delta must not be zero")
    n = max(int(math.ceil((float(limit) - float(start)) / float(delta))), 0)
    values = start + np.arange(n, dtype=start.dtype) * delta
    return [ctx.b.constant(values.astype(start.dtype), DType.from_numpy(start.dtype))]


@converts("EyeLike")
def convert_eye_like(ctx: NodeContext) -> list[Value]:

    x = ctx.input(0)
    if x.type.rank != 2:
        raise ctx.fail(f"input must be 2-D, got {x.type}")
    dtype = x.type.dtype
    if ctx.attr("dtype") is not None:
        dtype = to_ir_dtype(int(ctx.attr("dtype")), f"output of EyeLike '{ctx.label}'")
    rows, cols = x.type.shape
    eye = np.eye(rows, cols, k=int(ctx.attr("k", 0)))
    return [ctx.b.constant(eye.astype(dtype.numpy), dtype)]


@converts("DepthToSpace")
def convert_depth_to_space(ctx: NodeContext) -> list[Value]:
    """[N, C, H, W] -> [N, C / bs^2, H * bs, W * bs] by reshape, transpose, reshape (DCR:
    depth-column-row order of the channel blocks, CRD: column-row-depth)."""
    b, x = ctx.b, ctx.input(0)
    bs = int(ctx.attr("blocksize"))
    if x.type.rank != 4 or bs < 1 or x.type.shape[1] % (bs * bs):
        raise ctx.fail(f"blocksize {bs} does not divide the channels of {x.type}")
    n, c, h, w = x.type.shape
    if ctx.attr("mode", "DCR") == "DCR":
        y = b.reshape(x, (n, bs, bs, c // (bs * bs), h, w))
        y = b.transpose(y, permutation=(0, 3, 4, 1, 5, 2))
    else:
        y = b.reshape(x, (n, c // (bs * bs), bs, bs, h, w))
        y = b.transpose(y, permutation=(0, 1, 4, 2, 5, 3))
    return [b.reshape(y, (n, c // (bs * bs), h * bs, w * bs))]


@converts("SpaceToDepth")
def convert_space_to_depth(ctx: NodeContext) -> list[Value]:
    """[N, C, H, W] -> [N, C * bs^2, H / bs, W / bs]: the block offsets become the major
    part of the channel (mode DCR, the default) or its minor part (CRD)."""
    b, x = ctx.b, ctx.input(0)
    bs = int(ctx.attr("blocksize"))
    if x.type.rank != 4 or bs < 1 or x.type.shape[2] % bs or x.type.shape[3] % bs:
        raise ctx.fail(f"blocksize {bs} does not divide the spatial dims of {x.type}")
    n, c, h, w = x.type.shape
    y = b.reshape(x, (n, c, h // bs, bs, w // bs, bs))
    mode = ctx.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise ctx.fail(f"mode must be DCR or CRD, got {mode!r}")
    perm = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
    y = b.transpose(y, permutation=perm)
    return [b.reshape(y, (n, c * bs * bs, h // bs, w // bs))]


def _dropout(ctx: NodeContext, x: Value, ratio: float) -> list[Value]:
    b = ctx.b
    if not 0.0 < ratio < 1.0:
        raise ctx.fail(f"ratio must lie in [0, 1), got {ratio}")
    u = uniform01(b, node_key(ctx), x.type.with_dtype(DType.F32))
    keep = b.compare(u, b.splat(ratio, u.type), direction="GE")
    scaled = b.multiply(x, b.splat(1.0 / (1.0 - ratio), x.type))
    return [b.select(keep, scaled, b.splat(0, x.type)), keep]
