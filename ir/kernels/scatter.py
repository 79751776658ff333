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
from nxcc.ir.kernels.common import compute_dtype
from nxcc.ir.kernels.gather import (
    batch_coordinates,
    element_strides,
    index_vectors,
    window_offsets,
)
from nxcc.ir.kernels.plan import Step, plan
from nxcc.ir.kernels.reducer import fast_ufunc
from nxcc.ir.kernels.scratch_pool import ScratchPool


def scatter_positions(attrs: Mapping[str, AttrValue], shape: tuple[int, ...],
                      indices: np.ndarray, updates: Sequence[np.ndarray]
                      ) -> tuple[np.ndarray, list[np.ndarray]]:
    """(flat positions in an operand of `shape`, each update's values in the same order):
    every element of every update window that fits inside the operand."""
    a: Mapping = attrs
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
    every = bool(fits.all())  # the usual case: no copy of the positions and values masked

    strides = element_strides(shape)
    offsets = window_offsets(window_dims, window_sizes, strides)
    flat = (starts @ strides)[:, None] + offsets[None, :]
    scatter_dims = [d for d in range(u0.ndim) if d not in update_window_dims]
    width = math.prod(window_sizes)
    values = [u.transpose([*scatter_dims, *update_window_dims]).reshape(count, width)
              for u in updates]
    if not every:
        flat, values = flat[fits], [v[fits] for v in values]
    return flat.reshape(-1), [v.reshape(-1) for v in values]


@kernel(ops.scatter)
def scatter(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
            attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """scatter(inputs..., indices, updates...): outs = inputs with updates combined in."""
    n = len(args) // 2
    inputs, indices, updates = args[:n], args[n], args[n + 1:]
    shape = inputs[0].shape
    flat, values = scatter_positions(attrs, shape, indices, updates)
    targets = [np.array(x, copy=True).reshape(-1) for x in inputs]
    combine_at(ctx, attrs["computation"], targets, flat, values)  # type: ignore[arg-type]
    for out, t in zip(outs, targets, strict=True):
        np.copyto(out, t.reshape(shape))


@plan(ops.scatter)
def scatter_plan(args: Sequence[np.ndarray], out: np.ndarray,
                 attrs: Mapping[str, AttrValue], ctx: KernelContext,
                 constant: Sequence[bool], pool: ScratchPool) -> Step | None:
    """One input combined by a numpy ufunc in its own dtype (an embedding's gradient: rows
    added into zeros): the input copied into the out, then the updates added there by
    `ufunc.at` (as `combine_at` does), with no copy of the input first. Else the kernel."""
    if len(args) != 3 or not out.flags.c_contiguous or args[0].dtype != out.dtype:
        return None
    ufunc = fast_ufunc(ctx, attrs["computation"], [out.dtype])  # type: ignore[arg-type]
    if ufunc is None or compute_dtype(out.dtype) != out.dtype:
        return None
    operand, indices, updates = args
    flat_out = out.reshape(-1)

    def run() -> None:
        np.copyto(out, operand)
        flat, (values,) = scatter_positions(attrs, out.shape, indices, [updates])
        if flat.size:
            ufunc.at(flat_out, flat, values.astype(out.dtype, copy=False))

    return run
