"""gather with full HLO semantics, by one fancy-indexing take on the flattened operand.

Every batch position (index of start_indices other than index_vector_dim) yields a start
vector: start_index_map scatters its components into operand dims, each clamped to
[0, dim - slice_size]; operand_batching_dims take the position's own coordinate along the
matching start_indices_batching_dims. The slice of slice_sizes at that start is read; dims
in collapsed_slice_dims and operand_batching_dims are dropped, the remaining (offset) dims
go to offset_dims of the result and the batch dims fill the other result dims in order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue
from nxcc.ir.kernels.base import KernelContext, kernel
from nxcc.ir.kernels.common import store
from nxcc.ir.kernels.plan import kernel_only


def index_vectors(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """`indices` as (*batch_shape, K) int64, the index vector dim moved last (or added).
    Unsigned values beyond int64 are capped at 2**62 (out of range either way)."""
    idx = np.asarray(indices)
    if index_vector_dim == idx.ndim:
        idx = idx[..., None]
    else:
        idx = np.moveaxis(idx, index_vector_dim, -1)
    if idx.dtype == np.uint64:
        idx = np.minimum(idx, np.uint64(2**62))
    return idx.astype(np.int64)


def batch_coordinates(batch_shape: Sequence[int], index_vector_dim: int,
                      dims: Sequence[int]) -> list[np.ndarray]:
    """For each indices dim of `dims`, the flat (B,) coordinate of every batch position
    (none without `dims`: also when the indices are one index vector, batch shape ())."""
    if not dims:
        return []
    coords = np.unravel_index(np.arange(math.prod(batch_shape)), tuple(batch_shape))
    return [coords[d if d < index_vector_dim else d - 1] for d in dims]


def element_strides(shape: Sequence[int]) -> np.ndarray:
    """Row-major element strides of `shape` (int64)."""
    strides = np.ones(len(shape), dtype=np.int64)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


def window_offsets(dims: Sequence[int], sizes: Sequence[int],
                   strides: np.ndarray) -> np.ndarray:
    """Flat offsets (row-major over `dims` with `sizes`) of every element of a window."""
    off = np.zeros((), dtype=np.int64)
    for d, n in zip(dims, sizes, strict=True):
        off = off[..., None] + np.arange(n, dtype=np.int64) * strides[d]
    return off.reshape(-1)


@kernel(ops.gather)
def gather(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
           attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """HLO gather (see the module doc)."""
    a: Mapping = attrs
    operand, indices = args
    out = outs[0]
    ivd = a["index_vector_dim"]
    idx = index_vectors(indices, ivd)
    batch_shape = idx.shape[:-1]
    idx = idx.reshape(-1, idx.shape[-1])
    sizes = a["slice_sizes"]
    rank = operand.ndim
    starts = np.zeros((idx.shape[0], rank), dtype=np.int64)
    for k, d in enumerate(a["start_index_map"]):
        starts[:, d] = np.clip(idx[:, k], 0, operand.shape[d] - sizes[d])
    for d, c in zip(a["operand_batching_dims"], batch_coordinates(
            batch_shape, ivd, a["start_indices_batching_dims"]), strict=True):
        starts[:, d] = c
    dropped = set(a["collapsed_slice_dims"]) | set(a["operand_batching_dims"])
    offset_dims = [d for d in range(rank) if d not in dropped]
    strides = element_strides(operand.shape)
    offsets = window_offsets(offset_dims, [sizes[d] for d in offset_dims], strides)
    flat = (starts @ strides)[:, None] + offsets[None, :]
    values = np.ravel(operand)[flat] if flat.size else np.empty(flat.shape, operand.dtype)
    values = values.reshape(*batch_shape, *(sizes[d] for d in offset_dims))

    nb = len(batch_shape)
    out_offset = sorted(a["offset_dims"])
    perm, batch_axis = [], 0
    for d in range(out.ndim):
        if d in out_offset:
            perm.append(nb + out_offset.index(d))
        else:
            perm.append(batch_axis)
            batch_axis += 1
    store(out, values.transpose(perm))


kernel_only(ops.gather)
