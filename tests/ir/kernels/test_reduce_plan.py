"""reduce planned once at load (`reduce_plan`): the kernel's bits straight into the result,
the input read afresh on every run, and the cases it leaves to the kernel."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.ir import DType, Module
from nxcc.ir.computations import binary_computation
from nxcc.ir.kernels.reduction import reduce_plan
from nxcc.ir.kernels.scratch_pool import ScratchPool
from tests.ir.kernels.fake_ctx import FakeCtx, run1


def _plan(opcode: str, x: np.ndarray, init: np.ndarray, out: np.ndarray, dims: tuple,
          constant: tuple[bool, bool] = (False, True)):
    module = Module("m")
    comp = binary_computation(module, opcode, DType.from_numpy(init.dtype))
    attrs = {"dimensions": dims, "computation": comp}
    return module, attrs, reduce_plan([x, init], out, attrs, FakeCtx(module), constant,
                                      ScratchPool())


@pytest.mark.parametrize(("opcode", "init"), [("add", 0.0), ("maximum", -np.inf),
                                              ("add", 1.5), ("multiply", 1.0)])
@pytest.mark.parametrize("dims", [(2,), (0, 1), (1,), (0, 1, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_same_bits_as_the_kernel(opcode: str, init: float, dims: tuple, dtype: type) -> None:
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((4, 6, 129)) * 3).astype(dtype)
    init_value = np.array(init if dtype != np.int32 else max(init, -5), dtype)
    shape = tuple(n for d, n in enumerate(x.shape) if d not in dims)
    out = np.full(shape, 7, dtype)
    module, attrs, run = _plan(opcode, x, init_value, out, dims)
    assert run is not None
    for _ in range(2):
        with np.errstate(all="ignore"):  # as the executor runs its steps
            run()
        np.testing.assert_array_equal(out, run1("reduce", [x, init_value], attrs, module))
        x *= 2  # read afresh


def test_what_it_leaves_to_the_kernel() -> None:
    x = np.ones((3, 4), np.float32)
    out = np.empty(3, np.float32)
    init = np.array(0.0, np.float32)
    assert _plan("add", x, init, out, (1,), (False, False))[2] is None  # init not constant
    assert _plan("add", x, init, np.empty((3, 4), np.float32), ())[2] is None  # no axis
    assert _plan("add", x.astype(np.float16), np.array(0, np.float16),
                 np.empty(3, np.float16), (1,))[2] is None  # computed in float32
    assert _plan("subtract", x, init, out, (1,))[2] is None  # no ufunc folds it
