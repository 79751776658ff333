"""Fused ops and reshape views in the executor: the planned program runs them bound to
their arrays and gives the unfused results."""

from __future__ import annotations

import numpy as np

from nxcc.backend.program.lower import WeightTable, lower_module
from nxcc.backend.runtime.executor import ProgramExecutor
from nxcc.passes.fusion.elementwise import FuseElementwise
from tests.runtime.test_executor import mixed_module, reference

RNG = np.random.default_rng(5)


def test_reshapes_of_planned_values_are_views_without_instructions() -> None:
    program = lower_module(mixed_module(), WeightTable())
    fn = program["functions"]["main"]
    assert "reshape" not in [ins["op"] for ins in fn["instructions"]]
    views = [s for s in fn["slots"] if "view_of" in s]
    assert [v["shape"] for v in views] == [[2, 6], [4, 3]]
    # each view sits where its source does
    for v in views:
        assert v["offset"] == fn["slots"][v["view_of"]]["offset"]


def test_fused_programs_run_bound_and_match_numpy() -> None:
    module = mixed_module()
    assert FuseElementwise().run(module)
    table = WeightTable()
    program = lower_module(module, table)
    ops = [ins["op"] for ins in program["functions"]["main"]["instructions"]]
    assert ops.count("fused_elementwise") == 2, ops
    ex = ProgramExecutor(program, table.arrays)
    for _ in range(3):  # the bound plan follows new inputs
        x = RNG.standard_normal((3, 4)).astype(np.float32)
        for got, want in zip(ex.run([x]), reference(x), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
