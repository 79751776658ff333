"""Instructions bound to their arrays at load: one zero-argument callable per instruction.

When every value of a function lives at a fixed place (the planned arena views, the
weights, the splats and the function's parameter buffers), each instruction can be turned
once into a callable that only does the work. `bind_step` looks up the op's entry in
`ir.kernels.plan.PLANS` (registered beside each kernel, or derived from the definition for
the elementwise families): its plan, given these arrays, gives that callable (the kernel's
one ufunc call with every view made in advance, a dot_general's matmul on operands packed
once, a fused chain's or a convolution's evaluation planned once...); when the op has no
plan, or these arrays do not fit it, the step is
`functools.partial(kernel, args, outs, attrs, ctx)`.

With `threads` above one, a large elementwise instruction is split into slabs run side by
side on that many threads (`parallel_steps.split_step`), each slab planned as above.

A splat constant (a broadcast scalar, every stride 0) read by an op whose entry says
`dense_constants` (dot_general, convolution; a fused convolution's operands of the
convolution) is made an ordinary array once, at load: BLAS
cannot read it, so numpy would multiply it in its own loop (or the convolution kernel copy
it) on every execution.

The executor ignores floating-point errors once per execution, as every kernel does per op.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.backend.runtime.parallel_steps import split_step
from nxcc.ir.attributes import AttrValue
from nxcc.ir.kernels.base import Kernel, KernelContext
from nxcc.ir.kernels.plan import PLANS, Step
from nxcc.ir.kernels.scratch_pool import ScratchPool
from nxcc.ir.opdef import OpDef


def bind_step(opdef: OpDef, kern: Kernel, args: Sequence[np.ndarray],
              outs: Sequence[np.ndarray], attrs: Mapping[str, AttrValue], ctx: KernelContext,
              constant: Sequence[bool], pool: ScratchPool | None = None, threads: int = 1,
              slab_pools: Sequence[ScratchPool] = ()) -> Step:
    """The instruction as a callable on these fixed arrays. `constant[i]`: args[i] never
    changes (a weight or splat), so what is derived from it may be computed now. `pool`:
    scratch shared with the other steps of the function (they run one at a time).
    `threads`: how many threads a large instruction may run on; `slab_pools`: the scratch
    of each of its slabs (`parallel_steps.split_step`)."""
    entry = PLANS.get(opdef)
    if entry is not None and entry.dense_constants:
        dense = entry.dense(len(args))
        args = [_dense(a) if fixed and k in dense else a
                for k, (a, fixed) in enumerate(zip(args, constant, strict=True))]
    if entry is not None and entry.plan is not None and len(outs) == 1:
        if threads > 1:
            split = split_step(opdef, entry.plan, args, outs[0], attrs, ctx, constant,
                               threads, slab_pools)
            if split is not None:
                return split
        fast = entry.plan(args, outs[0], attrs, ctx, constant, pool or ScratchPool())
        if fast is not None:
            return fast
    return functools.partial(kern, list(args), list(outs), attrs, ctx)


def _dense(x: np.ndarray) -> np.ndarray:
    """A broadcast constant (a splat: every stride 0) made an ordinary array, once. BLAS
    cannot read a zero-stride matrix: numpy's matmul falls back to its own loop (5x slower
    on VGG-19's first classifier layer) and a convolution copied its weight on every call."""
    if x.size > 1 and 0 in x.strides:
        return np.ascontiguousarray(x)
    return x
