"""reduce: variadic reduction of inputs over `dimensions` by a computation (see reducer)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue, Symbol, attr_ints, attr_of
from nxcc.ir.kernels.base import KernelContext, kernel
from nxcc.ir.kernels.common import store
from nxcc.ir.kernels.plan import kernel_only
from nxcc.ir.kernels.reducer import fold, prepare


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


kernel_only(ops.reduce)
