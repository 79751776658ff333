"""Planned steps: what an op becomes when every array it touches is fixed (the executor's
fast path).

The executor binds each instruction once, at load, to the arrays it reads and writes
(`backend/runtime/bound_steps.py`). Every op definition has an entry in `PLANS` saying how:

- a plan, ``plan(args, out, attrs, ctx, constant, pool) -> step | None``: for the op's
  one result `out`, a zero-argument callable doing exactly what the kernel does on these
  arrays (a numpy call with every view it needs made in advance, or a kernel's evaluation
  planned once), or None when these arrays do not fit the plan (the kernel is then called);
  `constant[i]` says args[i] never changes (a weight or splat), so what is derived from it
  may be computed now; `pool` is scratch shared with the function's other steps, which run
  one at a time;
- `dense_constants`: a broadcast constant (a splat, every stride 0) among the op's operands
  (True: any of them; a tuple: those of these indices, a product's, not an elementwise
  epilogue's) is made an ordinary array once, at load, for the plan and the kernel alike
  (BLAS cannot read a zero-stride matrix: numpy would multiply it in its own loop on every
  execution);
- `strided_out`: the plan and the kernel write an out of any strides (a slice of a larger
  buffer), so the memory plan may place the op's result in its slice of a concatenation
  (`backend/program/concat_parts.py`);
- `kernel_only(...)`: no plan; the kernel is called as it is.

The elementwise families' plans are derived from their definitions (`from_defs`), as their
kernels are; the others are registered beside their kernels with ``@plan(ops.x)``.
`tests/ir/ops/test_op_coverage.py` checks that every op has its entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from nxcc.ir.attributes import AttrValue
from nxcc.ir.kernels.base import KernelContext, load_kernels
from nxcc.ir.kernels.scratch_pool import ScratchPool
from nxcc.ir.opdef import OpDef
from nxcc.ir.registry import OpTable

#: a bound instruction: the work, on fixed arrays
Step = Callable[[], object]

#: plan(args, out, attrs, ctx, constant, pool) -> the step, or None (the kernel is called)
Plan = Callable[[Sequence[np.ndarray], np.ndarray, Mapping[str, AttrValue], KernelContext,
                 Sequence[bool], ScratchPool], Step | None]


@dataclass(frozen=True)
class StepPlan:
    """One op's entry: its plan (None: the kernel is called as it is) and whether its
    broadcast constant operands are made dense at load."""

    plan: Plan | None
    dense_constants: bool | tuple[int, ...] = False
    strided_out: bool = False

    def dense(self, operands: int) -> Sequence[int]:
        """The indices of the operands made dense when they are broadcast constants."""
        if self.dense_constants is True:
            return range(operands)
        return self.dense_constants or ()


#: op definition -> its `StepPlan`; lookups also take the op's text name.
PLANS: OpTable[StepPlan] = OpTable("step plan", load=load_kernels)


def plan(*opdefs: OpDef, dense_constants: bool | tuple[int, ...] = False,
         strided_out: bool = False) -> Callable[[Plan], Plan]:
    """Decorator: the decorated function is the plan of each op of `opdefs`."""

    def register(fn: Plan) -> Plan:
        for opdef in opdefs:
            PLANS.add(opdef, StepPlan(fn, dense_constants, strided_out))
        return fn

    return register


def kernel_only(*opdefs: OpDef) -> None:
    """Register `opdefs` as ops whose kernel is called as it is (no plan)."""
    for opdef in opdefs:
        PLANS.add(opdef, StepPlan(None))
