"""scatter planned once at load (`scatter_plan`): one input combined by a ufunc, the input
copied into the out and the updates added there, the kernel's bits, inputs read afresh;
other computations left to the kernel."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.ir import DType, Module
from nxcc.ir.computations import binary_computation
from nxcc.ir.kernels.scatter import scatter_plan
from nxcc.ir.kernels.scratch_pool import ScratchPool
from tests.ir.kernels.fake_ctx import FakeCtx, run_op, scalar_function

ROWS = {"update_window_dims": (2,), "inserted_window_dims": (0,),
        "scatter_dims_to_operand_dims": (0,), "index_vector_dim": 2,
        "input_batching_dims": (), "scatter_indices_batching_dims": ()}


@pytest.mark.parametrize("zeros", [True, False])
def test_an_embedding_gradient_gives_the_kernels_bits(zeros: bool) -> None:
    """Rows added into a table (repeated tokens, one token out of range: skipped), twice
    with new values."""
    module = Module("m")
    attrs = {**ROWS, "computation": binary_computation(module, "add", DType.F32)}
    rng = np.random.default_rng(5)
    table = (np.broadcast_to(np.float32(0), (50, 16)) if zeros
             else rng.standard_normal((50, 16)).astype(np.float32))
    tokens = rng.integers(0, 50, (3, 7)).astype(np.int32)
    tokens[0, :3] = 4  # the same row three times: added in order
    tokens[2, 6] = 50  # out of range
    updates = rng.standard_normal((3, 7, 16)).astype(np.float32)
    out = np.full((50, 16), np.nan, np.float32)
    ctx = FakeCtx(module)
    run = scatter_plan([table, tokens, updates], out, attrs, ctx, [zeros, False, False],  # type: ignore[arg-type]
                       ScratchPool())
    assert run is not None
    for _ in range(2):
        run()
        (want,) = run_op("scatter", [table, tokens, updates], attrs, module, ctx)
        np.testing.assert_array_equal(out, want)
        updates += 1  # read afresh
        tokens[1] = (tokens[1] + 3) % 50


def test_a_replacing_scatter_is_left_to_the_kernel() -> None:
    module = Module("m")
    replace = scalar_function(module, "replace", [DType.F32, DType.F32], lambda b, p: [p[1]])
    args = [np.zeros((5, 4), np.float32), np.zeros((2, 1), np.int32),
            np.ones((2, 1, 4), np.float32)]
    assert scatter_plan(args, np.empty((5, 4), np.float32),  # type: ignore[arg-type]
                        {**ROWS, "computation": replace}, FakeCtx(module),
                        [False] * 3, ScratchPool()) is None
