"""scatter with HLO semantics: variadic, combining by the computation (see combine).

Each update element at (scatter position, window position) goes to operand index
start + window offset: start comes from the index vector of its scatter position, mapped by
scatter_dims_to_operand_dims (input_batching_dims take the position's coordinate along the
matching scatter_indices_batching_dims); window dims of the update map in order onto the
operand dims that are neither inserted_window_dims nor input_batching_dims. Starts are not
clamped: an update window that does not fit entirely inside the operand is skipped, as XLA
does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue
from nxcc.ir.kernels.base import KernelContext, kernel
from nxcc.ir.kernels.combine import combine_at
from nxcc.ir.kernels.gather import (
    batch_coordinates,
    element_strides,
    index_vectors,
    window_offsets,
)
from nxcc.ir.kernels.plan import kernel_only


@kernel(ops.scatter)
def scatter(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
            attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """scatter(inputs..., indices, updates...): outs = inputs with updates combined in."""
    a: Mapping = attrs
    n = len(args) // 2
    inputs, indices, updates = args[:n], args[n], args[n + 1:]
    shape = inputs[0].shape
    rank = len(shape)
    ivd = a["index_vector_dim"]
    idx = index_vectors(indices, ivd)
    batch_shape = idx.shape[:-1]
    idx = idx.reshape(-1, idx.shape[-1])
    count = idx.shape[0]

    starts = np.zeros((count, rank), dtype=np.int64)
    for k, d in enumerate(a["scatter_dims_to_operand_dims"]):
        starts[:, d] = idx[:, k]
    for d, c in zip(a["input_batching_dims"], batch_coordinates(
            batch_shape, ivd, a["scatter_indices_batching_dims"]), strict=True):
        starts[:, d] = c

    update_window_dims = list(a["update_window_dims"])
    skipped = set(a["inserted_window_dims"]) | set(a["input_batching_dims"])
    window_dims = [d for d in range(rank) if d not in skipped]
    u0 = updates[0]
    window_sizes = [u0.shape[d] for d in update_window_dims]
    size = np.ones(rank, dtype=np.int64)
    for d, s in zip(window_dims, window_sizes, strict=True):
        size[d] = s
    fits = np.all((starts >= 0) & (starts <= np.asarray(shape, dtype=np.int64) - size), axis=1)

    strides = element_strides(shape)
    offsets = window_offsets(window_dims, window_sizes, strides)
    flat = ((starts @ strides)[:, None] + offsets[None, :])[fits].reshape(-1)
    scatter_dims = [d for d in range(u0.ndim) if d not in update_window_dims]
    width = math.prod(window_sizes)
    values = [u.transpose([*scatter_dims, *update_window_dims]).reshape(count, width)[fits]
              .reshape(-1) for u in updates]

    targets = [np.array(x, copy=True).reshape(-1) for x in inputs]
    combine_at(ctx, a["computation"], targets, flat, values)
    for out, t in zip(outs, targets, strict=True):
        np.copyto(out, t.reshape(shape))


kernel_only(ops.scatter)
