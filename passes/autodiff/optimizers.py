"""Optimizers and gradient clipping as IR builders, with PyTorch's semantics.

An optimizer names the state slots it keeps per parameter (`slots`, zeros at first) and
`update(b, lr, t, param, grad, slots)` returns the new parameter and the new slots, where
`lr` is the f32 learning rate of this step and `t` the f64 number of this step (1 for the
first). Scalar bookkeeping (bias corrections, step sizes) runs in f64 as PyTorch's Python
floats do; the tensors stay in the parameter's type.

- SGD (torch.optim.SGD, dampening 0): buf = momentum * buf + (g + wd * p);
  p -= lr * (nesterov ? g' + momentum * buf : buf); no slot without momentum.
- AdamW (torch.optim.AdamW): p *= 1 - lr * wd; m = b1 m + (1 - b1) g;
  v = b2 v + (1 - b2) g^2; p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
- Adam: as AdamW with L2 weight decay added to the gradient (torch.optim.Adam).
`clip_by_global_norm` is torch.nn.utils.clip_grad_norm_: scale every gradient by
min(1, max_norm / (norm + 1e-6)), norm the 2-norm of all gradients together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nxcc.ir.builder import Builder
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType
from nxcc.passes.autodiff.losses import reduce_all

F64 = TensorType(DType.F64, ())


@dataclass(frozen=True)
class OptimizerConfig:
    """What `--optimizer` and its flags say."""

    name: str
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    momentum: float = 0.0
    nesterov: bool = False

    def __post_init__(self) -> None:
        if self.name not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {self.name!r} (known: "
                             f"{', '.join(sorted(OPTIMIZERS))})")
        if not all(0.0 <= beta < 1.0 for beta in self.betas):
            raise ValueError(f"betas must lie in [0, 1), got {self.betas}")
        if self.eps < 0 or self.weight_decay < 0 or self.momentum < 0:
            raise ValueError("eps, weight decay and momentum must be >= 0")

    @property
    def slots(self) -> tuple[str, ...]:
        """The per-parameter state this optimizer keeps (suffixes of the state names)."""
        if self.name == "sgd":
            return ("momentum",) if self.momentum else ()
        return ("adam_m", "adam_v")


def _scalar(b: Builder, x: Value, like: Value) -> Value:
    """A scalar `x` converted to `like`'s type and broadcast to its shape."""
    x = b.convert(x, like.type.dtype)
    return b.broadcast_in_dim(x, shape=like.type.shape, broadcast_dimensions=())


def _times(b: Builder, x: Value, factor: float) -> Value:
    return b.multiply(x, b.splat(factor, x.type))


def sgd_update(b: Builder, cfg: OptimizerConfig, lr: Value, t: Value, param: Value,
               grad: Value, slots: Sequence[Value]) -> tuple[Value, list[Value]]:
    d = grad
    if cfg.weight_decay:
        d = b.add(d, _times(b, param, cfg.weight_decay))
    new_slots: list[Value] = []
    if cfg.momentum:
        buf = b.add(_times(b, slots[0], cfg.momentum), d)
        new_slots.append(buf)
        d = b.add(d, _times(b, buf, cfg.momentum)) if cfg.nesterov else buf
    return b.subtract(param, b.multiply(_scalar(b, lr, param), d)), new_slots


def adam_update(b: Builder, cfg: OptimizerConfig, lr: Value, t: Value, param: Value,
                grad: Value, slots: Sequence[Value]) -> tuple[Value, list[Value]]:
    beta1, beta2 = cfg.betas
    m, v = slots
    lr64 = b.convert(lr, DType.F64)
    if cfg.name == "adamw" and cfg.weight_decay:
        keep = b.subtract(b.splat(1.0, F64), _times(b, lr64, cfg.weight_decay))
        param = b.multiply(param, _scalar(b, keep, param))
    elif cfg.weight_decay:
        grad = b.add(grad, _times(b, param, cfg.weight_decay))
    m = b.add(_times(b, m, beta1), _times(b, grad, 1.0 - beta1))
    v = b.add(_times(b, v, beta2), _times(b, b.multiply(grad, grad), 1.0 - beta2))

    def correction(beta: float) -> Value:  # 1 - beta^t, in f64
        return b.subtract(b.splat(1.0, F64), b.power(b.splat(beta, F64), t))

    step_size = b.divide(lr64, correction(beta1))
    root2 = b.sqrt(correction(beta2))
    denom = b.add(b.divide(b.sqrt(v), _scalar(b, root2, v)), b.splat(cfg.eps, v.type))
    update = b.multiply(_scalar(b, step_size, param), b.divide(m, denom))
    return b.subtract(param, update), [m, v]


OPTIMIZERS = {"sgd": sgd_update, "adam": adam_update, "adamw": adam_update}


def clip_by_global_norm(b: Builder, grads: Sequence[Value], max_norm: float | None
                        ) -> tuple[list[Value], Value]:
    """The gradients scaled to a global 2-norm of at most `max_norm` (unchanged when None),
    and the norm before clipping (f32)."""
    squares = [b.convert(reduce_all(b, b.multiply(g, g)), DType.F32) for g in grads]
    total = squares[0]
    for s in squares[1:]:
        total = b.add(total, s)
    norm = b.sqrt(total)
    if max_norm is None:
        return list(grads), norm
    f32 = norm.type
    coef = b.divide(b.splat(max_norm, f32), b.add(norm, b.splat(1e-6, f32)))
    coef = b.minimum(coef, b.splat(1.0, f32))
    return [b.multiply(g, _scalar(b, coef, g)) for g in grads], norm


def apply_optimizer(b: Builder, cfg: OptimizerConfig, lr: Value, t: Value, param: Value,
                    grad: Value, slots: Sequence[Value]) -> tuple[Value, list[Value]]:
    """The parameter and slots after one step of `cfg`'s optimizer."""
    return OPTIMIZERS[cfg.name](b, cfg, lr, t, param, grad, slots)
