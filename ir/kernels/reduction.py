"""reduce: variadic reduction of inputs over `dimensions` by a computation (see reducer).

Planned (`reduce_plan`): one input of a native dtype reduced by one commutative binary op
from a constant init, straight into its result: the kernel's ``ufunc.reduce`` call with the
same arguments, its output the result buffer (no fresh array and copy per execution).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue, Symbol, attr_ints, attr_of
from nxcc.ir.kernels.base import KernelContext, kernel
from nxcc.ir.kernels.common import NATIVE_NUMBERS, bound_call, store
from nxcc.ir.kernels.plan import Step, plan
from nxcc.ir.kernels.reducer import fast_ufunc, fold, prepare
from nxcc.ir.kernels.scratch_pool import ScratchPool


@kernel(ops.reduce)
def reduce(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
           attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """reduce(inputs..., inits...): outs[i] = fold of inputs over `dimensions` from inits."""
    n = len(args) // 2
    inputs, inits = args[:n], args[n:]
    comp = attr_of(attrs, "computation", Symbol)
    ufunc, values = prepare(ctx, comp, inputs, inits)
    results = fold(ctx, comp, ufunc, values, attr_ints(attrs, "dimensions"), inits)
    for out, r in zip(outs, results, strict=True):
        store(out, r)


@plan(ops.reduce)
def reduce_plan(args: Sequence[np.ndarray], out: np.ndarray, attrs: Mapping[str, AttrValue],
                ctx: KernelContext, constant: Sequence[bool], pool: ScratchPool) -> Step | None:
    """``ufunc.reduce(x, axes, None, out, False, init)`` where that is what `fold` computes
    for these arrays (one input and its init, the init constant, x, init and out of one
    native dtype, at least one axis reduced); else None."""
    if len(args) != 2 or not constant[1]:
        return None
    x, init = args
    axes = tuple(sorted(attr_ints(attrs, "dimensions")))
    if not axes or not (x.dtype == init.dtype == out.dtype) or x.dtype not in NATIVE_NUMBERS:
        return None
    ufunc = fast_ufunc(ctx, attrs["computation"], [init.dtype])  # type: ignore[arg-type]
    if ufunc is None:
        return None
    return bound_call(ufunc.reduce, x, axes, None, out, False, init[()] if init.ndim == 0
                      else init.reshape(-1)[0])
