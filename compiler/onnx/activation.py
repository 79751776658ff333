"""Activation functions and softmax, decomposed into elementwise ops and reductions."""

from __future__ import annotations

import math

from nxcc.compiler.onnx.context import NodeContext, binary, reduce, splat_like
from nxcc.compiler.onnx.reduce import arg_extreme
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.core import Value

SELU_ALPHA = 1.67326319217681884765625
SELU_GAMMA = 1.05070102214813232421875


def _positive(b: Builder, x: Value) -> Value:
    """x > 0 elementwise."""
    return b.compare(x, splat_like(b, 0, x), direction="GT")


def _scale(b: Builder, x: Value, k: float) -> Value:
    return x if k == 1.0 else b.multiply(x, splat_like(b, k, x))


@converts("Relu")
def convert_relu(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    return [ctx.b.maximum(x, splat_like(ctx.b, 0, x))]


@converts("LeakyRelu")
def convert_leaky_relu(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    alpha = float(ctx.attr("alpha", 0.01))
    return [b.select(_positive(b, x), x, _scale(b, x, alpha))]


@converts("PRelu")
def convert_prelu(ctx: NodeContext) -> list[Value]:
    """PRelu: the slope broadcasts (unidirectionally) to x."""
    b, x = ctx.b, ctx.input(0)
    slope = b.broadcast_to(ctx.input(1), x.type.shape)
    return [b.select(_positive(b, x), x, b.multiply(x, slope))]


@converts("ThresholdedRelu")
def convert_thresholded_relu(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    above = b.compare(x, splat_like(b, float(ctx.attr("alpha", 1.0)), x), direction="GT")
    return [b.select(above, x, splat_like(b, 0, x))]


def _elu(b: Builder, x: Value, alpha: float) -> Value:
    """x if x > 0 else alpha * (exp(x) - 1)."""
    return b.select(_positive(b, x), x, _scale(b, b.expm1(x), alpha))


@converts("Elu")
def convert_elu(ctx: NodeContext) -> list[Value]:
    return [_elu(ctx.b, ctx.input(0), float(ctx.attr("alpha", 1.0)))]


@converts("Selu")
def convert_selu(ctx: NodeContext) -> list[Value]:
    b = ctx.b
    alpha = float(ctx.attr("alpha", SELU_ALPHA))
    gamma = float(ctx.attr("gamma", SELU_GAMMA))
    return [_scale(b, _elu(b, ctx.input(0), alpha), gamma)]


@converts("Celu")
def convert_celu(ctx: NodeContext) -> list[Value]:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    b, x = ctx.b, ctx.input(0)
    alpha = float(ctx.attr("alpha", 1.0))
    zero = splat_like(b, 0, x)
    neg = _scale(b, b.expm1(_scale(b, x, 1.0 / alpha)), alpha)
    return [b.add(b.maximum(x, zero), b.minimum(neg, zero))]


@converts("Gelu")
def convert_gelu(ctx: NodeContext) -> list[Value]:
    """approximate='none': 0.5 x (1 + erf(x / sqrt 2));
    'tanh': 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    b, x = ctx.b, ctx.input(0)
    mode = ctx.attr("approximate", "none")
    if mode == "none":
        inner = b.erf(_scale(b, x, 1.0 / math.sqrt(2.0)))
    elif mode == "tanh":
        cube = b.multiply(b.multiply(x, x), x)
        poly = b.add(x, _scale(b, cube, 0.044715))
        inner = b.tanh(_scale(b, poly, math.sqrt(2.0 / math.pi)))
    else:
        raise ctx.unsupported(f"approximate='{mode}'")
    one_plus = b.add(inner, splat_like(b, 1, x))
    return [b.multiply(_scale(b, x, 0.5), one_plus)]


@converts("HardSigmoid")
def convert_hard_sigmoid(ctx: NodeContext) -> list[Value]:
    return [_hard_sigmoid(ctx.b, ctx.input(0), float(ctx.attr("alpha", 0.2)),
                          float(ctx.attr("beta", 0.5)))]


def _hard_sigmoid(b: Builder, x: Value, alpha: float, beta: float) -> Value:
    """max(0, min(1, alpha x + beta))."""
    y = b.add(_scale(b, x, alpha), splat_like(b, beta, x))
    return b.clamp(splat_like(b, 0, x), y, splat_like(b, 1, x))


@converts("HardSwish")
def convert_hard_swish(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    return [b.multiply(x, _hard_sigmoid(b, x, 1.0 / 6.0, 0.5))]


def _softplus(b: Builder, x: Value) -> Value:
    """log(1 + exp(x)), computed stably as max(x, 0) + log1p(exp(-|x|))."""
    tail = b.log1p(b.exp(b.negate(b.abs(x))))
    return b.add(b.maximum(x, splat_like(b, 0, x)), tail)


@converts("Softplus")
def convert_softplus(ctx: NodeContext) -> list[Value]:
    return [_softplus(ctx.b, ctx.input(0))]


@converts("Softsign")
def convert_softsign(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    return [b.divide(x, b.add(b.abs(x), splat_like(b, 1, x)))]


@converts("Mish")
def convert_mish(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    return [b.multiply(x, b.tanh(_softplus(b, x)))]


def _softmax_dims(ctx: NodeContext, x: Value) -> list[int]:
    """The dims a Softmax-like node normalises over.

    Since opset 13 that is the single `axis` (default -1); before, the input is coerced to
    2-D [prod(shape[:axis]), prod(shape[axis:])] (default axis 1) and the softmax runs over
    the second dimension, i.e. over all dims from `axis` on.
    """
    if ctx.opset >= 13:
        return [ctx.axis(int(ctx.attr("axis", -1)), x.type.rank)]
    axis = ctx.axis(int(ctx.attr("axis", 1)), x.type.rank)
    return list(range(axis, x.type.rank))


def _shifted(ctx: NodeContext) -> tuple[Value, list[int]]:
    """x - max(x) over the softmax dims (for numerical stability), and the dims."""
    b, x = ctx.b, ctx.input(0)
    if not x.type.dtype.is_float:
        raise ctx.fail(f"expects a floating-point input, got {x.type}")
    dims = _softmax_dims(ctx, x)
    peak = reduce(b, x, dims, ops.maximum, keepdims=True)
    return binary(b, ops.subtract, x, peak, ctx), dims


@converts("Softmax")
def convert_softmax(ctx: NodeContext) -> list[Value]:
    b = ctx.b
    shifted, dims = _shifted(ctx)
    e = b.exp(shifted)
    total = reduce(b, e, dims, ops.add, keepdims=True)
    return [binary(b, ops.divide, e, total, ctx)]


@converts("LogSoftmax")
def convert_log_softmax(ctx: NodeContext) -> list[Value]:
    b = ctx.b
    shifted, dims = _shifted(ctx)
    total = reduce(b, b.exp(shifted), dims, ops.add, keepdims=True)
    return [binary(b, ops.subtract, shifted, b.log(total), ctx)]


@converts("Hardmax")
def convert_hardmax(ctx: NodeContext) -> list[Value]:
    """1 at the first maximum over the softmax dims (row-major order), 0 elsewhere."""

    b, x = ctx.b, ctx.input(0)
    shape = x.type.shape
    dims = _softmax_dims(ctx, x)
    axis = dims[0]
    if len(dims) > 1:  # before opset 13: coerce to 2-D
        lead = math.prod(shape[:axis])
        x, axis = b.reshape(x, (lead, x.type.size // max(lead, 1))), 1
    index = arg_extreme(b, x, axis, ops.maximum, last=False, keepdims=True)
    iota = b.iota(dtype=index.type.dtype, shape=x.type.shape, dimension=axis)
    hit = b.compare(iota, b.broadcast_to(index, x.type.shape), direction="EQ")
    return [b.reshape(b.convert(hit, x.type.dtype), shape)]
