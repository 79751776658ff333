"""Folding arrays with a reduction computation: the engine of reduce and reduce_window.

When the computation is one commutative binary op that numpy has as a ufunc (add, multiply,
maximum, minimum, and, or, xor) and there is a single input, `fold` uses ``ufunc.reduce``
with the init value as ``initial``. Otherwise it reduces by a vectorized tree: the reduced
axes are moved last and flattened, then adjacent pairs are combined by one `ctx.call` on
whole arrays per level (O(log n) calls; left-to-right order is kept, so associative but
non-commutative computations work), and the init value is folded in at the end:
``result = computation(init..., tree_result...)``. HLO leaves the association order of a
reduction unspecified, so both are faithful.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import Symbol
from nxcc.ir.kernels.base import KernelContext
from nxcc.ir.kernels.common import as_compute, is_float, move_to_end
from nxcc.ir.opdef import OpDef

_PRED_UFUNCS: dict[OpDef, np.ufunc] = {
    ops.add: np.logical_or, ops.or_: np.logical_or, ops.maximum: np.logical_or,
    ops.multiply: np.logical_and, ops.and_: np.logical_and, ops.minimum: np.logical_and,
    ops.xor: np.logical_xor,
}
_INT_UFUNCS: dict[OpDef, np.ufunc] = {
    ops.add: np.add, ops.multiply: np.multiply, ops.maximum: np.maximum,
    ops.minimum: np.minimum, ops.and_: np.bitwise_and, ops.or_: np.bitwise_or,
    ops.xor: np.bitwise_xor,
}
_FLOAT_UFUNCS: dict[OpDef, np.ufunc] = {
    ops.add: np.add, ops.multiply: np.multiply, ops.maximum: np.maximum,
    ops.minimum: np.minimum,
}


def fn_name(computation: Symbol | str) -> str:
    """The function name of a computation attribute."""
    return computation.name if isinstance(computation, Symbol) else str(computation)


def fast_ufunc(ctx: KernelContext, computation: Symbol | str,
               dtypes: Sequence[np.dtype]) -> np.ufunc | None:
    """The numpy ufunc equivalent to `computation` over one operand of `dtypes[0]`, if any."""
    if len(dtypes) != 1:
        return None
    opdef = ctx.binary_op(fn_name(computation))
    if opdef is None:
        return None
    dtype = np.dtype(dtypes[0])
    if dtype == np.bool_:
        return _PRED_UFUNCS.get(opdef)
    if is_float(dtype):
        return _FLOAT_UFUNCS.get(opdef)
    return _INT_UFUNCS.get(opdef)


def call(ctx: KernelContext, computation: Symbol | str,
         args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """ctx.call on whole arrays, results as arrays."""
    return [np.asarray(r) for r in ctx.call(fn_name(computation), list(args))]


def tree_reduce(ctx: KernelContext, computation: Symbol | str,
                values: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Reduce the last axis (length >= 1) of every array of `values` together by combining
    adjacent pairs, level by level; returns arrays without the last axis."""
    xs = list(values)
    length = xs[0].shape[-1]
    while length > 1:
        half = length // 2
        lo = [x[..., 0:2 * half:2] for x in xs]
        hi = [x[..., 1:2 * half:2] for x in xs]
        combined = call(ctx, computation, lo + hi)
        if length % 2:
            combined = [np.concatenate([np.broadcast_to(c, lo[0].shape), x[..., -1:]], axis=-1)
                        for c, x in zip(combined, xs, strict=True)]
        xs = combined
        length = half + length % 2
    return [x[..., 0] for x in xs]


def prepare(ctx: KernelContext, computation: Symbol | str, inputs: Sequence[np.ndarray],
            inits: Sequence[np.ndarray]) -> tuple[np.ufunc | None, list[np.ndarray]]:
    """(the fast ufunc or None, the inputs converted to the dtypes `fold` works in)."""
    ufunc = fast_ufunc(ctx, computation, [i.dtype for i in inits])
    if ufunc is not None:
        return ufunc, [as_compute(inputs[0].astype(inits[0].dtype, copy=False))]
    return None, [x.astype(i.dtype, copy=False) for x, i in zip(inputs, inits, strict=True)]


def fold(ctx: KernelContext, computation: Symbol | str, ufunc: np.ufunc | None,
         inputs: Sequence[np.ndarray], axes: Sequence[int],
         inits: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Reduce `inputs` (as returned by `prepare`) over `axes`, starting from `inits`.

    Returns one array per input (the inputs' shape without `axes`); the caller stores them.
    """
    axes = tuple(sorted(axes))
    if ufunc is not None:
        x = inputs[0]
        init = as_compute(np.asarray(inits[0]))
        with np.errstate(all="ignore"):
            if not axes:
                return [ufunc(x, init)]
            return [ufunc.reduce(x, axis=axes, initial=init[()])]
    flat = [move_to_end(x, axes) for x in inputs]
    shape = flat[0].shape[:-1]
    init_b = [np.broadcast_to(np.asarray(i), shape) for i in inits]
    if flat[0].shape[-1] == 0:
        return init_b
    reduced = tree_reduce(ctx, computation, flat)
    return call(ctx, computation, init_b + reduced)
