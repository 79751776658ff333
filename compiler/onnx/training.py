"""The optimizer operators of ai.onnx.preview.training: Adagrad, Adam, Momentum.

Each updates N tensors at once: inputs R (learning rate), T (update count), then the N
tensors X, their gradients G and their optimizer state (H; V, H; V); outputs the new X, then
the new state. The formulas are ONNX's own (its operator documentation), which differ from
PyTorch's optimizers of `passes.autodiff.optimizers` (ONNX scales the learning rate for
Adam's bias correction and adds epsilon outside the corrected square root). Scalar factors
are computed in f64 and rounded once to the tensors' type.
"""

from __future__ import annotations

from collections.abc import Sequence

from nxcc.compiler.onnx.context import NodeContext, float_type_of
from nxcc.compiler.onnx.registry import converts
from nxcc.ir.builder import Builder
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType

DOMAIN = "ai.onnx.preview.training"
F64 = TensorType(DType.F64, ())


def _groups(ctx: NodeContext, per_tensor: int) -> list[list[Value]]:
    """[X..., G..., state...] split into `per_tensor` lists of N values each."""
    values = [ctx.input(i) for i in range(2, len(ctx.inputs))]
    if not values or len(values) % per_tensor:
        raise ctx.fail(f"expects R, T and {per_tensor} inputs per optimized tensor, got "
                       f"{len(ctx.inputs)} inputs")
    n = len(values) // per_tensor
    groups = [values[k * n:(k + 1) * n] for k in range(per_tensor)]
    for xs in zip(*groups, strict=True):
        float_type_of(ctx, xs[0])
        if any(v.type != xs[0].type for v in xs):
            raise ctx.fail(f"a tensor, its gradient and its state must share one type, got "
                           f"{', '.join(str(v.type) for v in xs)}")
    return groups


def _c(b: Builder, value: float) -> Value:
    return b.splat(value, F64)


def _spread(b: Builder, s: Value, like: Value) -> Value:
    """Scalar `s` converted to `like`'s element type and broadcast to its shape."""
    return b.broadcast_in_dim(b.convert(s, like.type.dtype), shape=like.type.shape,
                              broadcast_dimensions=())


def _times(b: Builder, x: Value, factor: float) -> Value:
    return b.multiply(x, b.splat(factor, x.type))


def _regularized(b: Builder, x: Value, g: Value, coefficient: float) -> Value:
    return b.add(_times(b, x, coefficient), g) if coefficient else g


def _scalars(ctx: NodeContext) -> tuple[Value, Value]:
    """R and T as f64 scalars."""
    b = ctx.b
    r, t = ctx.input(0, "R"), ctx.input(1, "T")
    for what, v in (("R", r), ("T", t)):
        if v.type.size != 1:
            raise ctx.fail(f"{what} must be a scalar, got {v.type}")
    return (b.reshape(b.convert(r, DType.F64), ()), b.reshape(b.convert(t, DType.F64), ()))


@converts(f"{DOMAIN}.Adagrad")
def convert_adagrad(ctx: NodeContext) -> Sequence[Value]:
    b = ctx.b
    xs, gs, hs = _groups(ctx, 3)
    r, t = _scalars(ctx)
    decay, eps = float(ctx.attr("decay_factor", 0.0)), float(ctx.attr("epsilon", 1e-6))
    norm = float(ctx.attr("norm_coefficient", 0.0))
    rate = b.divide(r, b.add(_c(b, 1.0), _times(b, t, decay)))
    new_x, new_h = [], []
    for x, g, h in zip(xs, gs, hs, strict=True):
        g = _regularized(b, x, g, norm)
        h = b.add(h, b.multiply(g, g))
        adaptive = b.add(b.sqrt(h), b.splat(eps, h.type))
        new_x.append(b.subtract(x, b.divide(b.multiply(_spread(b, rate, x), g), adaptive)))
        new_h.append(h)
    return [*new_x, *new_h]


@converts(f"{DOMAIN}.Adam")
def convert_adam(ctx: NodeContext) -> Sequence[Value]:
    b = ctx.b
    xs, gs, vs, hs = _groups(ctx, 4)
    r, t = _scalars(ctx)
    alpha, beta = float(ctx.attr("alpha", 0.9)), float(ctx.attr("beta", 0.999))
    eps, norm = float(ctx.attr("epsilon", 1e-6)), float(ctx.attr("norm_coefficient", 0.0))
    post = float(ctx.attr("norm_coefficient_post", 0.0))
    corrected = b.divide(b.multiply(r, b.sqrt(b.subtract(_c(b, 1.0), b.power(_c(b, beta), t)))),
                         b.subtract(_c(b, 1.0), b.power(_c(b, alpha), t)))
    rate = b.select(b.compare(t, _c(b, 0.0), direction="GT"), corrected, r)
    new_x, new_v, new_h = [], [], []
    for x, g, v, h in zip(xs, gs, vs, hs, strict=True):
        g = _regularized(b, x, g, norm)
        v = b.add(_times(b, v, alpha), _times(b, g, 1.0 - alpha))
        h = b.add(_times(b, h, beta), _times(b, b.multiply(g, g), 1.0 - beta))
        root = b.add(b.sqrt(h), b.splat(eps, h.type))
        x = b.subtract(x, b.divide(b.multiply(_spread(b, rate, x), v), root))
        new_x.append(_times(b, x, 1.0 - post) if post else x)
        new_v.append(v)
        new_h.append(h)
    return [*new_x, *new_v, *new_h]


@converts(f"{DOMAIN}.Momentum")
def convert_momentum(ctx: NodeContext) -> Sequence[Value]:
    b = ctx.b
    xs, gs, vs = _groups(ctx, 3)
    r, t = _scalars(ctx)
    alpha, beta = float(ctx.attr("alpha")), float(ctx.attr("beta"))
    norm = float(ctx.attr("norm_coefficient"))
    mode = ctx.attr("mode", "standard")
    if mode not in ("standard", "nesterov"):
        raise ctx.fail(f"mode must be 'standard' or 'nesterov', got {mode!r}")
    scale = b.select(b.compare(t, _c(b, 0.0), direction="GT"), _c(b, beta), _c(b, 1.0))
    new_x, new_v = [], []
    for x, g, v in zip(xs, gs, vs, strict=True):
        g = _regularized(b, x, g, norm)
        v = b.add(_times(b, v, alpha), b.multiply(_spread(b, scale, g), g))
        step = v if mode == "standard" else b.add(g, _times(b, v, alpha))
        new_x.append(b.subtract(x, b.multiply(_spread(b, r, x), step)))
        new_v.append(v)
    return [*new_x, *new_v]
