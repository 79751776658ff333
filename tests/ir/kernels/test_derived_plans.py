"""The plans derived from the elementwise definitions (`from_defs.exact_ufunc`): for every
unary and binary op and every native dtype its type rule allows, the planned ufunc call
writes the kernel's bits, and the plan declines (the kernel runs) where it is not exact."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.ir import ops
from nxcc.ir.dtypes import DType
from nxcc.ir.kernels import KERNELS
from nxcc.ir.kernels.from_defs import exact_ufunc
from nxcc.ir.kernels.plan import PLANS
from nxcc.ir.kernels.scratch_pool import ScratchPool
from nxcc.ir.opdef import ElementwiseDef, TypeRuleError, all_opdefs
from nxcc.ir.types import TensorType
from tests.ir.kernels.fake_ctx import FakeCtx

NATIVE = [np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64)]
RNG = np.random.default_rng(7)


def _allowed(opdef: ElementwiseDef, dtype: np.dtype) -> bool:
    t = TensorType(DType.from_numpy(dtype), (4,))
    try:
        opdef.infer([t] * opdef.operands, {}, None)  # type: ignore[operator]
    except TypeRuleError:
        return False
    return True


CASES = [(d, t) for d in all_opdefs() if isinstance(d, ElementwiseDef) for t in NATIVE
         if _allowed(d, t)]


def _operand(dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "f":  # signs, zeros, large and small magnitudes, inf and NaN
        x = RNG.standard_normal(61) * np.array([1e-3, 1.0, 30.0])[RNG.integers(0, 3, 61)]
        return np.concatenate([x, [0.0, -0.0, np.inf, np.nan]]).astype(dtype)
    info = np.iinfo(dtype)
    return np.concatenate([RNG.integers(-50, 50, 61), [0, 1, info.min, info.max]]
                          ).astype(dtype)


@pytest.mark.parametrize(("opdef", "dtype"), CASES, ids=[f"{d.name}-{t}" for d, t in CASES])
def test_the_planned_call_writes_the_kernels_bits(opdef: ElementwiseDef,
                                                  dtype: np.dtype) -> None:
    args = [_operand(dtype) for _ in range(opdef.operands)]  # type: ignore[arg-type]
    want = np.empty_like(args[0])
    KERNELS[opdef](args, [want], {}, FakeCtx(None))  # type: ignore[arg-type]
    got = np.empty_like(args[0])
    step = PLANS[opdef].plan(args, got, {}, FakeCtx(None), [False] * len(args),  # type: ignore[misc, arg-type]
                             ScratchPool())
    if exact_ufunc(opdef, dtype) is None:
        assert step is None
        return
    assert step is not None
    with np.errstate(all="ignore"):
        step()
    assert got.tobytes() == want.tobytes()


def test_what_the_definitions_say() -> None:
    """Exact in the compute dtype: the ufunc; a ByKind: its float part on floats;
    evaluated in float64: none, unless float32 by the function's own loop."""
    f32, f64, i32 = (np.dtype(t) for t in (np.float32, np.float64, np.int32))
    assert exact_ufunc(ops.add, i32) is np.add
    assert exact_ufunc(ops.divide, f32) is np.divide
    assert exact_ufunc(ops.divide, i32) is None  # truncating integer division
    assert exact_ufunc(ops.exp, f32) is np.exp
    assert exact_ufunc(ops.exp, f64) is None  # through float64 with its own rounding
    assert exact_ufunc(ops.sin, f32) is None
    assert exact_ufunc(ops.add, np.dtype(np.float16)) is None
    assert exact_ufunc(ops.compare, f32) is None  # not an ElementwiseDef: its own plan
