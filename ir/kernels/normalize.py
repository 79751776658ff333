"""Kernels of the fused row ops `softmax` and `layer_norm` (made by `passes/fusion`).

Each runs the steps of the op chain it replaces, in the same order and precision (a row
reduction as the reduce kernel does it, `exp` and `rsqrt` as their own kernels compute
them: float32 exp by numpy's float32 loop, the rest rounded once from float64), but in the
result buffer and one row-statistics array instead of a full-size array per op.

`prepare_softmax` and `prepare_layer_norm` plan a softmax or a layer norm over the last
axis of fixed contiguous float arrays once (the executor binds them at load): the same
steps, block by block of whole rows (`ROW_BLOCK` elements), into buffers made once (the
layer norm's in the function's shared scratch). A row's steps are the same numpy calls on
the same row, so the results are bit for bit the kernel's. The blocks are large because a
row-statistics step costs per call more than a block's trip through the cache saves:
softmax on f32[1,12,128,128] took 319 us in blocks of 16,384 elements, 291 in blocks of
131,072 (one for BERT's shape), f32[1,12,512,512] 5.25 against 4.32 ms; a layer norm on
f32[1,128,768] 103 against 71 us (the kernel, which allocates its squares per call: 77).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue, attr_of
from nxcc.ir.kernels.base import NO_CALLS, KernelContext, get_kernel, kernel
from nxcc.ir.kernels.common import NATIVE_FLOATS, bound_call, in_order
from nxcc.ir.kernels.plan import plan
from nxcc.ir.kernels.scratch_pool import ScratchPool

_F32 = np.dtype(np.float32)
#: elements per block of whole rows in the planned softmax and layer norm (see above)
ROW_BLOCK = 1 << 17


@kernel(ops.softmax)
def softmax(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
            attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    x, out = args[0], outs[0]
    axis = attr_of(attrs, "dimension", int)
    row = np.empty(x.shape[:axis] + (1,) + x.shape[axis + 1:], x.dtype)
    with np.errstate(all="ignore"):
        _softmax_steps(x, out, row, axis, ctx)


def _softmax_steps(x: np.ndarray, out: np.ndarray, row: np.ndarray, axis: int,
                   ctx: KernelContext) -> None:
    """out = softmax(x) along `axis`, with `row` (x's shape, size 1 along `axis`) for the
    row statistics."""
    for call in _softmax_calls(x, out, row, axis, ctx):
        call()


def _softmax_calls(x: np.ndarray, out: np.ndarray, row: np.ndarray, axis: int,
                   ctx: KernelContext) -> list[Callable[[], object]]:
    """The numpy calls of `_softmax_steps`, bound to these arrays. (numpy's float32 exp
    has no slow path for masked scores such as -1e4, float32's min or -inf; its float64
    exp, which float32 went through before, is 4x slower on them.)"""
    if out.dtype == _F32 and ops.exp.float32_native:  # as the exp kernel, without its checks
        exp = bound_call(np.exp, out, out)
    elif out.dtype in NATIVE_FLOATS:
        exp = functools.partial(np.exp, out, out=out, dtype=np.float64, casting="unsafe")
    else:  # elementwise: in place is safe
        exp = functools.partial(get_kernel(ops.exp), [out], [out], {}, ctx)
    return [bound_call(np.maximum.reduce, x, axis, None, row, True),  # (array, axis, dtype,
            bound_call(np.subtract, x, row, out), exp,                 # out, keepdims)
            bound_call(np.add.reduce, out, axis, None, row, True),
            bound_call(np.divide, out, row, out)]


def _as_rows(x: np.ndarray, out: np.ndarray, axis: int
             ) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(x and out as [rows, n] views, whole rows per block) for a row op over the last axis
    of C-contiguous non-empty arrays of one native float dtype; else None."""
    if (axis not in (-1, x.ndim - 1) or x.dtype != out.dtype or out.dtype not in NATIVE_FLOATS
            or x.shape != out.shape or x.size == 0 or not x.flags.c_contiguous
            or not out.flags.c_contiguous):
        return None
    n = x.shape[-1]
    x2, out2 = x.reshape(-1, n), out.reshape(-1, n)
    return x2, out2, min(max(1, ROW_BLOCK // n), x2.shape[0])


def prepare_softmax(x: np.ndarray, out: np.ndarray, axis: int) -> Callable[[], None] | None:
    """A callable computing the softmax of `x` into `out` along `axis` (the softmax kernel's
    steps, block by block of rows), or None unless `axis` is the last, `x` and `out` are
    C-contiguous arrays of one native float dtype and not empty."""
    found = _as_rows(x, out, axis)
    if found is None:
        return None
    x2, out2, rows = found
    row = np.empty((rows, 1), out.dtype)
    calls: list[Callable[[], object]] = []
    for i in range(0, x2.shape[0], rows):
        calls += _softmax_calls(x2[i:i + rows], out2[i:i + rows],
                                row[:min(rows, x2.shape[0] - i)], 1, NO_CALLS)
    return in_order(calls)


@plan(ops.softmax)
def softmax_plan(args: Sequence[np.ndarray], out: np.ndarray, attrs: Mapping[str, AttrValue],
                 ctx: KernelContext, constant: Sequence[bool], pool: ScratchPool
                 ) -> Callable[[], None] | None:
    """Over the last axis of contiguous floats: the kernel's steps block by block of rows,
    planned once (`prepare_softmax`)."""
    return prepare_softmax(args[0], out, attr_of(attrs, "dimension", int))


def prepare_layer_norm(x: np.ndarray, out: np.ndarray, axis: int, epsilon: float,
                       pool: ScratchPool | None = None) -> Callable[[], None] | None:
    """A callable computing the layer norm of `x` into `out` along `axis` (the layer_norm
    kernel's steps and bits, block by block of whole rows, with the row statistics, the
    squares and the float64 rsqrt in `pool`'s scratch, shared with the function's other
    steps), or None unless `axis` is the last and `x` and `out` are C-contiguous non-empty
    arrays of one native float dtype."""
    found = _as_rows(x, out, axis)
    if found is None:
        return None
    x2, out2, rows = found
    n = x2.shape[1]
    reservation = (pool or ScratchPool()).reserve(
        [((rows, 1), out.dtype), ((rows, 1), np.dtype(np.float64)), ((rows, n), out.dtype)])
    length, eps = out.dtype.type(n), out.dtype.type(epsilon)
    steps: list[Callable[[], None]] = []

    def run() -> None:
        if not steps:  # the scratch exists once every step of the function is bound
            row, wide, squares = reservation.arrays()
            for i in range(0, x2.shape[0], rows):
                k = min(rows, x2.shape[0] - i)
                steps.append(functools.partial(
                    _layer_norm_steps, x2[i:i + k], out2[i:i + k], row[:k], squares[:k], 1,
                    length, eps, functools.partial(_rsqrt_float64, wide=wide[:k])))
        for step in steps:
            step()

    return run


def _layer_norm_steps(x: np.ndarray, out: np.ndarray, row: np.ndarray, squares: np.ndarray,
                      axis: int, length: np.generic, eps: np.generic,
                      rsqrt: Callable[[np.ndarray], object]) -> None:
    """out = the layer norm of x along `axis` (no scale or bias), with `row` (x's shape,
    size 1 along `axis`) for the row statistics, `squares` (out's shape) for the squared
    deviations, and `rsqrt` computing 1/sqrt of the row variances in place."""
    np.add.reduce(x, axis=axis, keepdims=True, out=row)
    np.divide(row, length, out=row)
    np.subtract(x, row, out=out)
    np.square(out, out=squares)
    np.add.reduce(squares, axis=axis, keepdims=True, out=row)
    np.divide(row, length, out=row)
    np.add(row, eps, out=row)
    rsqrt(row)
    np.multiply(out, row, out=out)


def _rsqrt_float64(row: np.ndarray, wide: np.ndarray) -> None:
    """row = 1 / sqrt(row) as the rsqrt kernel computes it for native floats: in float64
    (in `wide`, row's shape), rounded once."""
    np.copyto(wide, row)
    np.sqrt(wide, out=wide)
    np.reciprocal(wide, out=wide)
    np.copyto(row, wide, casting="unsafe")


@kernel(ops.layer_norm)
def layer_norm(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
               attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    x, out = args[0], outs[0]
    axis = attr_of(attrs, "dimension", int)
    n = out.dtype.type(x.shape[axis])
    eps = out.dtype.type(attr_of(attrs, "epsilon", float))
    row = np.empty(x.shape[:axis] + (1,) + x.shape[axis + 1:], x.dtype)
    with np.errstate(all="ignore"):
        _layer_norm_steps(x, out, row, np.empty_like(out), axis, n, eps,
                          lambda r: get_kernel(ops.rsqrt)([r], [r], {}, ctx))


@plan(ops.layer_norm)
def layer_norm_plan(args: Sequence[np.ndarray], out: np.ndarray,
                    attrs: Mapping[str, AttrValue], ctx: KernelContext,
                    constant: Sequence[bool], pool: ScratchPool) -> Callable[[], None] | None:
    """Over the last axis of contiguous floats: the kernel's steps block by block of rows,
    their scratch in the function's pool (`prepare_layer_norm`)."""
    return prepare_layer_norm(args[0], out, attr_of(attrs, "dimension", int),
                              attr_of(attrs, "epsilon", float), pool)
