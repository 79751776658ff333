"""The vocabulary-parallel cross-entropy (NxD Core's `parallel_cross_entropy`)."""

from __future__ import annotations

from nxcc.ir import ops
from nxcc.ir.core import Value
from nxcc.nxd.model import Model, ModelError
from nxcc.passes.autodiff.losses import IGNORE_INDEX, reduce_all


def parallel_cross_entropy(m: Model, logits: Value, labels: Value,
                           ignore_index: int = IGNORE_INDEX) -> tuple[Value, Value]:
    """Cross-entropy of logits split by classes over the TP ranks.

    `logits` [..., C / TP]: this rank's classes (rank r holds classes r C/TP ..
    (r + 1) C/TP - 1, as a `ColumnParallelLinear` without `gather_output` or the transposed
    `ParallelEmbedding` table leave them); `labels` [...] integers, global class ids, or
    `ignore_index` for a position not counted. Returns (the sum over counted positions of
    -log softmax(logits)[label], the number of counted positions): float scalars of the
    logits' type, the same on every rank. The shift (the largest logit, max over ranks)
    passes no gradient; the exp-sum and the label's logit are summed over the ranks by one
    all-reduce. With TP = 1 it is the ordinary summed cross-entropy."""
    b = m.b
    shape = logits.type.shape
    if not logits.type.dtype.is_float or not shape:
        raise ModelError(f"cross-entropy needs floating-point logits with a class dimension, "
                         f"got {logits.type}")
    if not labels.type.dtype.is_integer or labels.type.shape != shape[:-1]:
        raise ModelError(f"cross-entropy needs integer labels of shape {list(shape[:-1])} (the "
                         f"logits {logits.type} without their classes), got {labels.type}")
    m.bound_input(labels, shape[-1] * m.tp_size, ignore_index)
    last = (len(shape) - 1,)
    lead = tuple(range(len(shape) - 1))

    def along(v: Value) -> Value:
        return b.broadcast_in_dim(v, shape=shape, broadcast_dimensions=lead)

    top = reduce_all(b, logits, ops.maximum, last)
    if m.tp_size > 1:
        top = b.all_reduce(top, reduction="max", replica_groups=m.groups)
    m.stop_gradient(top)
    shifted = b.subtract(logits, along(top))
    total = reduce_all(b, b.exp(shifted), ops.add, last)
    classes = b.iota(dtype=labels.type.dtype, shape=shape, dimension=len(shape) - 1)
    if m.tp_rank:
        classes = b.add(classes, b.splat(m.tp_rank * shape[-1], classes.type))
    is_label = b.compare(classes, along(labels), direction="EQ")
    picked = reduce_all(b, b.select(is_label, shifted, b.splat(0.0, shifted.type)), ops.add, last)
    if m.tp_size > 1:
        total, picked = b.ops("all_reduce", [total, picked], {
            "reduction": "sum", "replica_groups": m.groups})
    nll = b.subtract(b.log(total), picked)
    keep = b.compare(labels, b.splat(ignore_index, labels.type), direction="NE")
    loss_sum = reduce_all(b, b.select(keep, nll, b.splat(0.0, nll.type)))
    count = reduce_all(b, b.convert(keep, logits.type.dtype))
    return loss_sum, count
