"""Losses as IR builders: each appends the ops computing a scalar loss and returns it.

- `cross_entropy(b, logits, labels)`: logits [..., C] (classes on the last dim), labels
  [...] integer class ids; the mean over every position whose label is not `ignore_index`
  (-100, as PyTorch) of -log softmax(logits)[label] (`cross_entropy_sum`: the sum and the
  count of those positions, for callers that divide by a count of their own). The
  log-softmax is the max-shifted log-sum-exp; the label's logit is picked by comparing
  with an iota (no gather), so ignored positions never index anything. All positions
  ignored gives NaN, as PyTorch.
- `mse(b, prediction, target)`: the mean of the squared differences.
A request that does not fit (shapes, dtypes) raises `LossError` saying what was expected.
"""

from __future__ import annotations

from collections.abc import Callable

from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.computations import binary_computation
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import OpDef
from nxcc.ir.types import TensorType

IGNORE_INDEX = -100


#: the reducers `reduce_all` takes -> their identity element
_IDENTITY: dict[OpDef, float] = {ops.add: 0.0, ops.maximum: float("-inf")}


class LossError(ValueError):
    """The loss cannot be built on these values."""


def reduce_all(b: Builder, x: Value, reducer: OpDef = ops.add,
               dims: tuple[int, ...] | None = None) -> Value:
    """`x` reduced with `reducer` (add or maximum) over `dims` (all dims by default)."""
    dtype = x.type.dtype
    dims = tuple(range(x.type.rank)) if dims is None else dims
    if not dims:
        return x
    init = _IDENTITY[reducer]
    return b.op(ops.reduce, [x, b.splat(init, TensorType(dtype, ()))], {
        "dimensions": dims, "computation": binary_computation(b.module, reducer, dtype)})


def _keep_last(b: Builder, x: Value, shape: tuple[int, ...]) -> Value:
    """`x` of shape[:-1] broadcast along a new last dim to `shape`."""
    return b.op(ops.broadcast_in_dim, [x], {"shape": shape,
                                          "broadcast_dimensions": tuple(range(len(shape) - 1))})


def cross_entropy(b: Builder, logits: Value, labels: Value,
                  ignore_index: int = IGNORE_INDEX) -> Value:
    total, count = cross_entropy_sum(b, logits, labels, ignore_index)
    return b.divide(total, count)


def cross_entropy_sum(b: Builder, logits: Value, labels: Value,
                      ignore_index: int = IGNORE_INDEX) -> tuple[Value, Value]:
    """(the sum of -log softmax(logits)[label] over positions whose label is not
    `ignore_index`, the number of those positions), both scalars of the logits' type."""
    t = logits.type
    if not t.dtype.is_float or t.rank < 1:
        raise LossError(f"cross-entropy needs floating-point logits with a class dimension, "
                        f"got {t}")
    if not labels.type.dtype.is_integer or labels.type.shape != t.shape[:-1]:
        raise LossError(f"cross-entropy needs integer labels of shape {list(t.shape[:-1])} "
                        f"(the logits {t} without their class dimension), got {labels.type}")
    last = t.rank - 1
    top = reduce_all(b, logits, ops.maximum, (last,))
    shifted = b.subtract(logits, _keep_last(b, top, t.shape))
    lse = b.log(reduce_all(b, b.exp(shifted), ops.add, (last,)))
    classes = b.op(ops.iota, [], {"dtype": labels.type.dtype, "shape": t.shape,
                                "dimension": last})
    is_label = b.compare(classes, _keep_last(b, labels, t.shape), direction="EQ")
    picked = reduce_all(b, b.select(is_label, shifted, b.splat(0.0, t)), ops.add, (last,))
    nll = b.subtract(lse, picked)
    ignore = b.splat(ignore_index, labels.type)
    keep = b.compare(labels, ignore, direction="NE")
    zero = b.splat(0.0, nll.type)
    total = reduce_all(b, b.select(keep, nll, zero))
    count = reduce_all(b, b.convert(keep, t.dtype))
    return total, count


def mse(b: Builder, prediction: Value, target: Value) -> Value:
    t = prediction.type
    if not t.dtype.is_float:
        raise LossError(f"mse needs a floating-point output, got {t}")
    if target.type != t:
        raise LossError(f"mse needs labels of the output's type {t}, got {target.type}")
    diff = b.subtract(prediction, target)
    total = reduce_all(b, b.multiply(diff, diff))
    return b.divide(total, b.splat(float(max(t.size, 1)), TensorType(t.dtype, ())))


LOSSES: dict[str, Callable[[Builder, Value, Value], Value]] = {
    "cross-entropy": cross_entropy,
    "mse": mse,
}


def label_type(loss: str, output: TensorType) -> TensorType:
    """The type of the labels `loss` reads for a model output of type `output`: int64
    class ids (cross-entropy) or the output's own type (mse)."""
    if loss == "cross-entropy":
        if output.rank < 1:
            raise LossError(f"cross-entropy needs logits with a class dimension, got {output}")
        return TensorType(DType.S64, output.shape[:-1])
    return output
