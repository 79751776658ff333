"""Data-movement kernels: broadcast_in_dim, reshape, transpose, slice, pad, concatenate,
reverse, iota, constant, copy. Each writes its out by one vectorized copy."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue, Dense, attr_ints, attr_of
from nxcc.ir.kernels.base import KernelContext, kernel
from nxcc.ir.kernels.common import in_order, pad_array, store
from nxcc.ir.kernels.plan import Step, kernel_only, plan
from nxcc.ir.kernels.scratch_pool import ScratchPool


@kernel(ops.broadcast_in_dim)
def broadcast_in_dim(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
                     attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """Operand dim i goes to out dim broadcast_dimensions[i]; other out dims repeat."""
    x, out = args[0], outs[0]
    shape = [1] * out.ndim
    for i, d in enumerate(attr_ints(attrs, "broadcast_dimensions")):
        shape[d] = x.shape[i]
    np.copyto(out, x.reshape(shape))


@kernel(ops.reshape)
def reshape(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
            attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """Row-major reshape."""
    np.copyto(outs[0], args[0].reshape(outs[0].shape))


@kernel(ops.transpose)
def transpose(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
              attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """Out dim i is operand dim permutation[i]."""
    np.copyto(outs[0], args[0].transpose(attr_ints(attrs, "permutation")))


@kernel(ops.slice)
def slice_(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
           attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """Static strided slice [start:limit:stride] on every dim."""
    index = tuple(slice(a, b, s) for a, b, s in zip(
        attr_ints(attrs, "start_indices"), attr_ints(attrs, "limit_indices"),
        attr_ints(attrs, "strides"), strict=True))
    np.copyto(outs[0], args[0][index])


@kernel(ops.pad)
def pad(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
        attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """HLO pad: interior padding, then low/high (negative = cropping)."""
    x, value = args
    np.copyto(outs[0], pad_array(x, value, attr_ints(attrs, "low"), attr_ints(attrs, "high"),
                                 attr_ints(attrs, "interior")))


@kernel(ops.concatenate)
def concatenate(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
                attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """Operands joined along `dimension`."""
    np.concatenate(list(args), axis=attr_of(attrs, "dimension", int), out=outs[0])


@kernel(ops.reverse)
def reverse(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
            attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """Operand reversed along each of `dimensions`."""
    dims = attr_ints(attrs, "dimensions")
    np.copyto(outs[0], np.flip(args[0], dims) if dims else args[0])


@kernel(ops.iota)
def iota(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
         attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """0, 1, 2... along `dimension`, repeated along the others."""
    out = outs[0]
    dim = attr_of(attrs, "dimension", int)
    shape = [1] * out.ndim
    shape[dim] = out.shape[dim]
    store(out, np.arange(out.shape[dim], dtype=np.int64).reshape(shape))


@kernel(ops.constant)
def constant(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
             attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """outs[0] = the `value` attribute."""
    value = attr_of(attrs, "value", Dense)
    np.copyto(outs[0], value.array)


@kernel(ops.copy)
def copy(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
         attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """outs[0] = args[0]."""
    np.copyto(outs[0], args[0])


kernel_only(ops.slice, ops.concatenate, ops.reverse, ops.iota, ops.constant)


@plan(ops.pad)
def pad_plan(args: Sequence[np.ndarray], out: np.ndarray, attrs: Mapping[str, AttrValue],
             ctx: KernelContext, constant: Sequence[bool], pool: ScratchPool) -> Step | None:
    """Edge padding only (no interior, no cropping), of one dtype: the operand copied into
    its place in out and the value into each border region (regions that do not overlap),
    with no padded array made per execution; else None (the kernel)."""
    x, value = args
    low, high = list(attr_ints(attrs, "low")), list(attr_ints(attrs, "high"))
    if any(attr_ints(attrs, "interior")) or min(low + high, default=0) < 0 or not (
            x.dtype == value.dtype == out.dtype):
        return None
    inner = [slice(lo, n - hi) for lo, hi, n in zip(low, high, out.shape, strict=True)]
    steps: list[Step] = [functools.partial(np.copyto, out[tuple(inner)], x)]
    for d, (lo, hi, n) in enumerate(zip(low, high, out.shape, strict=True)):
        for edge in (slice(0, lo), slice(n - hi, n)):
            if edge.stop > edge.start:  # dims before d inside, d on its edge, after whole
                region = tuple(inner[:d]) + (edge,) + (slice(None),) * (out.ndim - d - 1)
                steps.append(functools.partial(np.copyto, out[region], value))
    return in_order(steps)


def _copy_step(view: np.ndarray, x: np.ndarray, out: np.ndarray) -> Step | None:
    """``np.copyto(out, view)`` when `view` is a view of x's memory (it then follows x's
    later values; a copy, as a reshape of a non-contiguous x makes, would not)."""
    if np.may_share_memory(view, x) or view.size == 0:
        return functools.partial(np.copyto, out, view)
    return None


def _same_dtype(args: Sequence[np.ndarray], out: np.ndarray) -> bool:
    return bool(args) and args[0].dtype == out.dtype


@plan(ops.reshape)
def reshape_plan(args: Sequence[np.ndarray], out: np.ndarray, attrs: Mapping[str, AttrValue],
                 ctx: KernelContext, constant: Sequence[bool], pool: ScratchPool
                 ) -> Step | None:
    """The copy of the operand's view of out's shape, the view made once."""
    if not _same_dtype(args, out):
        return None
    return _copy_step(args[0].reshape(out.shape), args[0], out)


@plan(ops.transpose)
def transpose_plan(args: Sequence[np.ndarray], out: np.ndarray,
                   attrs: Mapping[str, AttrValue], ctx: KernelContext,
                   constant: Sequence[bool], pool: ScratchPool) -> Step | None:
    """The copy of the operand's transposed view, the view made once."""
    if not _same_dtype(args, out):
        return None
    return _copy_step(args[0].transpose(attr_ints(attrs, "permutation")), args[0], out)


@plan(ops.broadcast_in_dim)
def broadcast_in_dim_plan(args: Sequence[np.ndarray], out: np.ndarray,
                          attrs: Mapping[str, AttrValue], ctx: KernelContext,
                          constant: Sequence[bool], pool: ScratchPool) -> Step | None:
    """The copy (broadcasting) of the operand viewed at out's rank, the view made once."""
    if not _same_dtype(args, out):
        return None
    x = args[0]
    shape = [1] * out.ndim
    for i, d in enumerate(attr_ints(attrs, "broadcast_dimensions")):
        shape[d] = x.shape[i]
    return _copy_step(x.reshape(shape), x, out)


@plan(ops.copy, strided_out=True)
def copy_plan(args: Sequence[np.ndarray], out: np.ndarray, attrs: Mapping[str, AttrValue],
              ctx: KernelContext, constant: Sequence[bool], pool: ScratchPool
              ) -> Step | None:
    """``np.copyto(out, operand)``."""
    if not _same_dtype(args, out):
        return None
    return _copy_step(args[0], args[0], out)
