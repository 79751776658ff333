"""split_scalars: the update's per-step scalars as a program of their own (text), with the
whole update program's bits (numeric, through the compiled programs)."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.driver.options import CompileOptions
from nxcc.driver.train.stage_program import CompiledProgram, compile_function
from nxcc.ir.printer import print_module
from nxcc.ir.verifier import verify_module
from nxcc.nxd.step.update import build_update_module, split_scalars
from nxcc.passes.autodiff.optimizers import OptimizerConfig

ADAMW = OptimizerConfig("adamw", weight_decay=0.01, betas=(0.9, 0.95))


def test_adamws_bias_corrections_move_to_the_scalars_function() -> None:
    scalars, update = split_scalars(build_update_module(ADAMW, 8))
    assert scalars is not None
    verify_module(scalars)
    verify_module(update)
    text = print_module(scalars)
    assert ("func @scalars(%grad_scale: f32[], %lr: f32[], %step: s32[]) -> "
            '("hoisted0": f32[], "hoisted1": f32[], "hoisted2": f32[])') in text, text
    assert "power(" in text and "sqrt(" in text, text
    rest = print_module(update)
    assert ("%step: s32[], %hoisted0: f32[], %hoisted1: f32[], %hoisted2: f32[]) -> "
            '("param": f32[8], "param.adam_m": f32[8], "param.adam_v": f32[8])') in rest, rest
    # what is left computes on vectors: no scalar arithmetic but on constants
    assert "power(" not in rest and "f64[] = " not in rest, rest
    assert "sqrt(%" in rest  # sqrt(v), the vector's


def test_an_update_without_step_scalars_is_left_alone() -> None:
    module = build_update_module(OptimizerConfig("sgd", momentum=0.9), 8)
    before = print_module(module)
    scalars, update = split_scalars(module)
    assert scalars is None and update is module and print_module(update) == before


def _program(module, name):  # noqa: ANN001, ANN202
    program = compile_function(module, name, CompileOptions(target="trn1"))
    assert isinstance(program, CompiledProgram)
    return program.executor(None)


@pytest.mark.parametrize("step", [0, 1, 7])
def test_the_split_programs_give_the_whole_programs_bits(step: int) -> None:
    n = 1000
    whole = _program(build_update_module(ADAMW, n), "update")
    scalars_module, update_module = split_scalars(build_update_module(ADAMW, n))
    scalars, update = _program(scalars_module, "scalars"), _program(update_module, "update")
    rng = np.random.default_rng(step)
    vectors = [rng.standard_normal(n).astype(np.float32) for _ in range(4)]
    vectors[2] = np.abs(vectors[2])  # the second moment
    given = [np.array(0.37, np.float32), np.array(3e-3, np.float32), np.array(step, np.int32)]
    want = whole.run([*vectors, *given])
    got = update.run([*vectors, *given, *scalars.run(given)])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
