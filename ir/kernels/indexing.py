"""dynamic_slice and dynamic_update_slice: start indices are clamped so the slice fits
([0, dim - size] in every dimension), as in HLO."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue, attr_ints
from nxcc.ir.kernels.base import KernelContext, kernel
from nxcc.ir.kernels.plan import kernel_only


def clamped_slices(shape: Sequence[int], starts: Sequence[np.ndarray],
                   sizes: Sequence[int]) -> tuple[slice, ...]:
    """The slices of `sizes` at `starts` (scalar arrays) clamped into `shape`."""
    out = []
    for n, s, size in zip(shape, starts, sizes, strict=True):
        start = min(max(int(np.asarray(s)), 0), n - size)
        out.append(slice(start, start + size))
    return tuple(out)


@kernel(ops.dynamic_slice)
def dynamic_slice(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
                  attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """outs[0] = x[starts : starts + slice_sizes] with clamped starts."""
    x = args[0]
    np.copyto(outs[0], x[clamped_slices(x.shape, args[1:], attr_ints(attrs, "slice_sizes"))])


@kernel(ops.dynamic_update_slice)
def dynamic_update_slice(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
                         attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """outs[0] = x with `update` written at the clamped starts."""
    x, update = args[0], args[1]
    out = outs[0]
    np.copyto(out, x)
    out[clamped_slices(x.shape, args[2:], update.shape)] = update


kernel_only(ops.dynamic_slice, ops.dynamic_update_slice)
