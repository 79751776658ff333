"""Moving values between the tensor-parallel and sequence-parallel regions (NxD's mappings).

Activations are [batch, seq, ...]; the *sequence* dimension is 1 and the *feature* dimension
is the last one unless a helper is told otherwise (`dim`). Three regions:

- replicated: every TP rank holds the whole value, the same on each;
- tensor-parallel: each rank holds its part of the features (after a column-parallel
  product), or a partial sum of the whole (before a row-parallel reduction);
- sequence-parallel: each rank holds its 1/TP of the sequence (NxD's sequence parallelism).
  With sequence parallelism off (`m.sequence_parallel` False) this region is the replicated
  whole sequence, so a model written with these helpers runs with it on or off: scatter and
  gather are then the value itself, and `reduce_scatter_to_sequence_parallel_region` is the
  all-reduce.

Each helper is built from IR collectives whose gradient rules give the conjugate move, as
Megatron's autograd functions do (forward / backward):

| helper | forward | backward |
| --- | --- | --- |
| copy_to_tensor_model_parallel_region | identity (`tp_copy`) | all-reduce |
| reduce_from_tensor_model_parallel_region | all-reduce | identity |
| scatter_to_tensor_model_parallel_region | this rank's slice of `dim` | all-gather |
| gather_from_tensor_model_parallel_region | all-gather of `dim` | this rank's slice |
| scatter_to_sequence_parallel_region | this rank's slice of the sequence | all-gather |
| gather_from_sequence_parallel_region | all-gather of the sequence | reduce-scatter, or slice |
| reduce_scatter_to_sequence_parallel_region | reduce-scatter of the sequence | all-gather |

(`gather_from_sequence_parallel_region` reduce-scatters the gradient with
`to_model_parallel`, its default, and slices it without.) A gather whose backward is a
slice (the gathered value feeds a replicated computation) is built exactly as a
zero-padded all-reduce; a scatter whose backward is a gather as the slice of a `tp_copy`.
With TP = 1 every helper is the value itself. Collectives use group-local replica groups
[[0 .. TP-1]] (`Model.groups`).
"""

from __future__ import annotations

from nxcc.ir.core import Value
from nxcc.nxd.model import Model, ModelError


def _axis(x: Value, dim: int) -> int:
    axis = dim if dim >= 0 else x.type.rank + dim
    if not 0 <= axis < x.type.rank:
        raise ModelError(f"dimension {dim} of a value of rank {x.type.rank}")
    return axis


def _rank_slice(m: Model, x: Value, dim: int) -> Value:
    """This rank's 1/TP of `x` along `dim` (ModelError when it does not divide)."""
    axis = _axis(x, dim)
    size = x.type.shape[axis]
    if size % m.tp_size:
        raise ModelError(f"dimension {axis} of size {size} does not divide by tensor "
                         f"parallel size {m.tp_size}")
    part = size // m.tp_size
    start = [0] * x.type.rank
    stop = list(x.type.shape)
    start[axis], stop[axis] = m.tp_rank * part, (m.tp_rank + 1) * part
    return m.b.slice(x, start_indices=tuple(start), limit_indices=tuple(stop),
                     strides=(1,) * x.type.rank)


def _scatter(m: Model, x: Value, dim: int) -> Value:
    """The rank's slice of a replicated `x`; its gradient the all-gather of the slices'
    (the zero-padded gradient of each rank summed by `tp_copy`'s rule)."""
    copied = m.b.tp_copy(x, replica_groups=m.groups)
    return m.mark_local(_rank_slice(m, copied, dim))


def _gather_exact(m: Model, x: Value, dim: int) -> Value:
    """The whole of `x` along `dim` on every rank, as the all-reduce of each rank's part
    padded with zeros (exact); its gradient is the rank's slice of the output's."""
    axis = _axis(x, dim)
    size = x.type.shape[axis]
    low = [0] * x.type.rank
    high = [0] * x.type.rank
    low[axis] = m.tp_rank * size
    high[axis] = (m.tp_size - 1 - m.tp_rank) * size
    zero = m.b.splat(0, x.type.with_shape(()))
    padded = m.b.pad(x, zero, low=tuple(low), high=tuple(high), interior=(0,) * x.type.rank)
    return m.b.all_reduce(padded, reduction="sum", replica_groups=m.groups)


def copy_to_tensor_model_parallel_region(m: Model, x: Value) -> Value:
    """Enter the tensor-parallel region from the replicated one: `x` itself, whose gradient
    (partial on each rank, as the computation after it is split) is summed over TP."""
    if m.tp_size == 1:
        return x
    return m.b.tp_copy(x, replica_groups=m.groups)


def reduce_from_tensor_model_parallel_region(m: Model, x: Value) -> Value:
    """Leave the tensor-parallel region: the sum over TP of each rank's partial `x`
    (the result replicated; its gradient passes unchanged)."""
    if m.tp_size == 1:
        return x
    return m.b.all_reduce(x, reduction="sum", replica_groups=m.groups)


def scatter_to_tensor_model_parallel_region(m: Model, x: Value, dim: int = -1) -> Value:
    """This rank's 1/TP of a replicated `x` along `dim` (the last by default)."""
    if m.tp_size == 1:
        return x
    return _scatter(m, x, dim)


def gather_from_tensor_model_parallel_region(m: Model, x: Value, dim: int = -1) -> Value:
    """The whole of `x` along `dim` (the last by default; each rank holds its 1/TP of it,
    in rank order), replicated; its gradient is this rank's slice."""
    if m.tp_size == 1:
        return x
    return _gather_exact(m, x, dim)


def scatter_to_sequence_parallel_region(m: Model, x: Value, dim: int = 1) -> Value:
    """Enter the sequence-parallel region: this rank's 1/TP of the sequence (`dim`) of a
    replicated `x` (with sequence parallelism off, `x` itself)."""
    if not m.sequence_parallel:
        return x
    return _scatter(m, x, dim)


def gather_from_sequence_parallel_region(m: Model, x: Value, to_model_parallel: bool = True,
                                         dim: int = 1) -> Value:
    """Leave the sequence-parallel region: the whole sequence of `x` on every rank.

    `to_model_parallel` (before a column-parallel product, NxD's default): the result feeds
    the tensor-parallel region, so its gradient is reduce-scattered (with sequence
    parallelism off this is `copy_to_tensor_model_parallel_region`). Otherwise the result
    feeds a replicated computation and its gradient is this rank's slice (with sequence
    parallelism off, `x` itself)."""
    if not m.sequence_parallel:
        return copy_to_tensor_model_parallel_region(m, x) if to_model_parallel else x
    if to_model_parallel:
        return m.b.all_gather(x, dimension=_axis(x, dim), replica_groups=m.groups)
    return _gather_exact(m, x, dim)


def reduce_scatter_to_sequence_parallel_region(m: Model, x: Value, dim: int = 1) -> Value:
    """Leave the tensor-parallel region into the sequence-parallel one: the sum over TP of
    each rank's partial `x`, of which this rank keeps its 1/TP of the sequence (`dim`);
    with sequence parallelism off, the whole sum (`reduce_from_tensor_model_parallel_region`)."""
    if not m.sequence_parallel:
        return reduce_from_tensor_model_parallel_region(m, x)
    axis = _axis(x, dim)
    if x.type.shape[axis] % m.tp_size:
        raise ModelError(f"sequence length {x.type.shape[axis]} does not divide by tensor "
                         f"parallel size {m.tp_size} (sequence parallelism)")
    out = m.b.reduce_scatter(x, dimension=axis, reduction="sum", replica_groups=m.groups)
    return m.mark_local(out)
