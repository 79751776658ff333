"""auto-cast and saturate-infinity: text tests of the rewrite, numeric tests of the effect."""

from __future__ import annotations

import textwrap

import ml_dtypes
import numpy as np
import pytest

from nxcc.ir.interpreter import IRContext
from nxcc.ir.parser import parse_module
from nxcc.ir.printer import print_module
from nxcc.ir.verifier import verify_module
from nxcc.passes.auto_cast import AutoCast
from nxcc.passes.manager import PassManager
from nxcc.passes.saturate_infinity import SaturateInfinity

MATMUL = """\
module @m {
  func @main(%a: f32[4,8], %b: f32[8,3]) -> (f32[4,3]) {
    %d = dot_general(%a, %b) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[4,3]
    %e = exp(%d) : f32[4,3]
    return %e
  }
}
"""


def run(text: str, *passes: object) -> str:
    module = parse_module(textwrap.dedent(text))
    PassManager(list(passes)).run(module)  # type: ignore[arg-type]
    verify_module(module)
    return print_module(module)


def evaluate(text: str, passes: list[object], *args: np.ndarray) -> np.ndarray:
    module = parse_module(textwrap.dedent(text))
    PassManager(passes).run(module)  # type: ignore[arg-type]
    return IRContext(module).call("main", list(args))[0]


def test_matmult_casts_the_operands_and_accumulates_in_f32() -> None:
    assert run(MATMUL, AutoCast("matmult", "bf16", True)) == textwrap.dedent("""\
    module @m {
      func @main(%a: f32[4,8], %b: f32[8,3]) -> (f32[4,3]) {
        %0 = convert(%a) {dtype = bf16} : bf16[4,8]
        %1 = convert(%b) {dtype = bf16} : bf16[8,3]
        %d = dot_general(%0, %1) {lhs_contracting_dims = [1], rhs_contracting_dims = [0], result_dtype = f32} : f32[4,3]
        %e = exp(%d) : f32[4,3]
        return %e
      }
    }
    """)


def test_without_mixed_precision_accumulation_the_result_is_rounded() -> None:
    text = run(MATMUL, AutoCast("matmult", "fp16", False))
    assert "dot_general(%0, %1) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f16[4,3]" in text
    assert "%d = convert(%2) {dtype = f32} : f32[4,3]" in text


def test_all_casts_elementwise_arithmetic_and_reuses_narrow_values() -> None:
    text = run(MATMUL, AutoCast("all", "bf16", False))
    # exp takes the bf16 dot result directly: no convert to f32 and back in between.
    assert "%3 = exp(%2) : bf16[4,3]" in text
    assert text.count("convert(") == 4
    assert text.rstrip().endswith("return %e\n  }\n}")


def test_none_and_non_f32_programs_are_unchanged() -> None:
    assert run(MATMUL, AutoCast("none")) == MATMUL
    f16 = MATMUL.replace("f32", "f16")
    assert run(f16, AutoCast("matmult", "bf16")) == f16


@pytest.mark.parametrize(("cast_type", "eps"), [("bf16", 2**-8), ("fp16", 2**-11),
                                                ("tf32", 2**-11)])
def test_outputs_are_within_the_cast_types_error(cast_type: str, eps: float) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 8)).astype(np.float32)
    b = rng.standard_normal((8, 3)).astype(np.float32)
    exact = np.exp(a.astype(np.float64) @ b)
    got = evaluate(MATMUL, [AutoCast("matmult", cast_type)], a, b)
    # each product carries up to 2 eps of relative error; exp turns an absolute error of
    # the dot into a relative one
    bound = 2 * eps * (np.abs(a) @ np.abs(b)) + 1e-6
    assert np.all(np.abs(np.log(got) - np.log(exact)) <= bound)
    assert not np.array_equal(got, np.exp(a @ b))


def test_tf32_rounds_to_ten_mantissa_bits_nearest_even() -> None:
    text = """\
    module @m {
      func @main(%a: f32[4], %b: f32[4]) -> (f32[4]) {
        %m = multiply(%a, %b) : f32[4]
        return %m
      }
    }
    """
    a = np.array([1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-10 + 2**-12, 3.0], np.float32)
    got = evaluate(text, [AutoCast("all", "tf32")], a, np.ones(4, np.float32))
    np.testing.assert_array_equal(got, [1.0, 1 + 2**-9, 1 + 2**-10, 3.0])


def test_saturate_infinity_turns_an_overflow_into_the_largest_finite_value() -> None:
    a = np.full((4, 8), 300, np.float32)
    b = np.full((8, 3), 300, np.float32)
    passes: list[object] = [AutoCast("matmult", "fp16", False)]
    plain = evaluate(MATMUL.replace("exp", "negate"), passes, a, b)
    assert np.all(np.isneginf(plain))
    saturated = evaluate(MATMUL.replace("exp", "negate"), [*passes, SaturateInfinity()], a, b)
    np.testing.assert_array_equal(saturated, np.float32(-65504))


def test_saturate_infinity_clamps_narrowing_converts() -> None:
    text = """\
    module @m {
      func @main(%a: f32[2]) -> (f32[2]) {
        %n = convert(%a) {dtype = f8e4m3fn} : f8e4m3fn[2]
        %w = convert(%n) {dtype = f32} : f32[2]
        return %w
      }
    }
    """
    a = np.array([1e6, -1e6], np.float32)
    assert np.all(np.isnan(evaluate(text, [], a)))  # f8e4m3fn has no inf: NaN
    limit = float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).max)
    np.testing.assert_array_equal(evaluate(text, [SaturateInfinity()], a), [limit, -limit])
