"""The kernels and plans of the unary and binary elementwise ops, made from their
definitions: an `ElementwiseDef` carries its numpy function and whether floats are evaluated
in float64, and `unary_kernel` / `binary_kernel` turn that into a kernel; `exact_ufunc` says,
from the same fields, for which dtypes that kernel is exactly one ufunc call with `out=`,
and that call is the op's plan (`plan.PLANS`). No per-op table here: a new op of these
families gets its kernel and its plan from its definition alone."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.ir.attributes import AttrValue
from nxcc.ir.kernels.base import KERNELS, Kernel, KernelContext
from nxcc.ir.kernels.binary import ByKind, binary_kernel
from nxcc.ir.kernels.common import NATIVE_NUMBERS, is_float
from nxcc.ir.kernels.plan import PLANS, Step, StepPlan
from nxcc.ir.kernels.scratch_pool import ScratchPool
from nxcc.ir.kernels.unary import unary_kernel
from nxcc.ir.opdef import ElementwiseDef, OpDef, all_opdefs

_F32 = np.dtype(np.float32)


def derived_kernel(opdef: ElementwiseDef) -> Kernel:
    """The kernel `opdef`'s fields describe."""
    assert opdef.fn is not None, opdef.name
    if opdef.operands == 1:
        return unary_kernel(opdef.fn, opdef.precise, opdef.float32_native)
    return binary_kernel(opdef.fn, opdef.precise)


def exact_ufunc(opdef: OpDef, dtype: np.dtype) -> np.ufunc | None:
    """The ufunc `f` for which ``f(*args, out=out)`` is exactly `opdef`'s kernel when every
    operand and the result are arrays of `dtype` and of one shape; None when there is none.

    That is the op's function (the float part of a `ByKind`) on the dtypes numpy computes
    natively (float32, float64, int32, int64), except for floats evaluated in float64
    (`precise`), unless float32 by the function's own loop (`float32_native`)."""
    if not isinstance(opdef, ElementwiseDef) or dtype not in NATIVE_NUMBERS:
        return None
    fn = opdef.fn
    if isinstance(fn, ByKind):
        fn = fn.float_fn if is_float(dtype) else fn.int_fn
    if not isinstance(fn, np.ufunc):
        return None
    if opdef.precise and is_float(dtype):
        return fn if opdef.float32_native and dtype == _F32 else None
    return fn


def _ufunc_plan(opdef: OpDef):
    def run(args: Sequence[np.ndarray], out: np.ndarray, attrs: Mapping[str, AttrValue],
            ctx: KernelContext, constant: Sequence[bool], pool: ScratchPool) -> Step | None:
        """The kernel's one ufunc call with `out=`, when it is one for these arrays (the
        executor ignores floating-point errors once per execution, as the kernel does)."""
        ufunc = exact_ufunc(opdef, out.dtype)
        if ufunc is None or not all(a.dtype == out.dtype and a.shape == out.shape
                                    for a in args):
            return None
        return functools.partial(ufunc, *args, out=out)

    return run


for _def in all_opdefs():
    if isinstance(_def, ElementwiseDef):
        KERNELS.add(_def, derived_kernel(_def))
        PLANS.add(_def, StepPlan(_ufunc_plan(_def)))
