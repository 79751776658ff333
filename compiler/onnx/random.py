"""Random operators: RandomUniform(Like), RandomNormal(Like), and (in shape.py) training-mode
Dropout; Bernoulli converts through its ONNX function body (RandomUniformLike, Less, Cast).

All draw from the IR's counter-based generator `random_bits` (Philox4x32-10): each node gets
its own key, from its `seed` attribute (when given) and its name, and counter 0; a training
step rewires the counters to its step counter so every step draws new numbers. Uniform
numbers take the top 24 bits of a word (exactly representable in f32); normal numbers are
Box-Muller pairs of two uniform draws.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

import numpy as np

from nxcc.compiler.onnx.context import NodeContext
from nxcc.compiler.onnx.dtypes import to_ir_dtype
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType

U64 = TensorType(DType.U64, ())
_GOLDEN = 0x9E3779B97F4A7C15


def node_key(ctx: NodeContext) -> int:
    """A 64-bit key for the node: its seed (if any) and its name mixed."""
    seed = ctx.attr("seed")
    base = int(seed) if seed is not None else 0x5EED
    mixed = (base * _GOLDEN + zlib.crc32(str(ctx.label).encode())) % (1 << 64)
    return mixed


def bits(b: Builder, key: int, shape: Sequence[int]) -> Value:
    """u32 random words of `shape` for `key` at counter 0."""
    return b.op(ops.random_bits, [b.constant(np.uint64(key)), b.constant(np.uint64(0))],
                {"shape": tuple(shape)})


def uniform01(b: Builder, key: int, t: TensorType, open_at_zero: bool = False) -> Value:
    """Uniform numbers of type `t` in [0, 1) (in (0, 1] when `open_at_zero`)."""
    words = bits(b, key, t.shape)
    top = b.op(ops.shift_right_logical, [words, b.splat(8, words.type)])
    if open_at_zero:
        top = b.add(top, b.splat(1, top.type))
    return b.multiply(b.convert(top, t.dtype), b.splat(2.0 ** -24, t))


def uniform(b: Builder, key: int, t: TensorType, low: float, high: float) -> Value:
    u = uniform01(b, key, t)
    return b.add(b.multiply(u, b.splat(high - low, t)), b.splat(low, t))


def normal(b: Builder, key: int, t: TensorType, mean: float, scale: float) -> Value:
    """Box-Muller: sqrt(-2 log u1) cos(2 pi u2), u1 in (0, 1], u2 in [0, 1)."""
    u1 = uniform01(b, key, t, open_at_zero=True)
    u2 = uniform01(b, (key + _GOLDEN) % (1 << 64), t)
    radius = b.sqrt(b.multiply(b.splat(-2.0, t), b.log(u1)))
    z = b.multiply(radius, b.cos(b.multiply(u2, b.splat(2 * math.pi, t))))
    return b.add(b.multiply(z, b.splat(scale, t)), b.splat(mean, t))


def _target(ctx: NodeContext, like: bool) -> TensorType:
    if like:
        x = ctx.input(0)
        dtype = ctx.attr("dtype")
        dt = to_ir_dtype(int(dtype), "dtype") if dtype is not None else x.type.dtype
        shape = x.type.shape
    else:
        dt = to_ir_dtype(int(ctx.attr("dtype", 1)), "dtype")
        shape = tuple(int(d) for d in ctx.attr("shape", []))
    if not dt.is_float:
        raise ctx.fail(f"random values must be floating-point, got {dt}")
    return TensorType(dt, tuple(shape))


@converts("RandomUniform", "RandomUniformLike")
def convert_random_uniform(ctx: NodeContext) -> list[Value]:
    t = _target(ctx, ctx.op_type.endswith("Like"))
    return [uniform(ctx.b, node_key(ctx), t, float(ctx.attr("low", 0.0)),
                    float(ctx.attr("high", 1.0)))]


@converts("RandomNormal", "RandomNormalLike")
def convert_random_normal(ctx: NodeContext) -> list[Value]:
    t = _target(ctx, ctx.op_type.endswith("Like"))
    return [normal(ctx.b, node_key(ctx), t, float(ctx.attr("mean", 0.0)),
                   float(ctx.attr("scale", 1.0)))]
