"""Property: every elementwise gradient rule agrees with central finite differences (f64)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType
from tests.passes.autodiff.gradcheck import check_gradients

SETTINGS = settings(max_examples=8, deadline=None)
shapes = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)
seeds = st.integers(0, 2**16)

# unary op -> the interval its inputs are drawn from (away from kinks and poles)
UNARY = {
    "exp": (-2, 2), "expm1": (-2, 2), "log": (0.5, 3), "log1p": (-0.5, 3), "tanh": (-2, 2),
    "logistic": (-3, 3), "sqrt": (0.5, 3), "rsqrt": (0.5, 3), "cbrt": (0.5, 3),
    "negate": (-2, 2), "sin": (-3, 3), "cos": (-3, 3), "erf": (-2, 2), "copy": (-2, 2),
}


def _away_from_zero(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.uniform(0.3, 2.0, shape) * rng.choice([-1.0, 1.0], shape)


@SETTINGS
@given(op=st.sampled_from(sorted(UNARY)), shape=shapes, seed=seeds)
def test_unary(op: str, shape: tuple[int, ...], seed: int) -> None:
    lo, hi = UNARY[op]
    x = np.random.default_rng(seed).uniform(lo, hi, shape)
    check_gradients(lambda b, p: b.op(op, p), {"x": x}, seed)


@SETTINGS
@given(shape=shapes, seed=seeds)
def test_abs(shape: tuple[int, ...], seed: int) -> None:
    x = _away_from_zero(np.random.default_rng(seed), shape)
    check_gradients(lambda b, p: b.abs(p[0]), {"x": x}, seed)


@SETTINGS
@given(op=st.sampled_from(["add", "subtract", "multiply", "divide", "power", "maximum",
                           "minimum"]), shape=shapes, seed=seeds)
def test_binary(op: str, shape: tuple[int, ...], seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 2.0, shape) if op == "power" else rng.uniform(-2, 2, shape)
    y = _away_from_zero(rng, shape) if op == "divide" else rng.uniform(-2, 2, shape)
    check_gradients(lambda b, p: b.op(op, p), {"x": x, "y": y}, seed)


@SETTINGS
@given(shape=shapes, seed=seeds)
def test_select_on_a_comparison(shape: tuple[int, ...], seed: int) -> None:
    rng = np.random.default_rng(seed)
    inputs = {"c": rng.normal(size=shape), "x": rng.normal(size=shape),
              "y": rng.normal(size=shape)}

    def build(b, p):
        c, x, y = p
        pred = b.compare(c, b.splat(0.0, c.type), direction="GT")
        return b.select(pred, b.exp(x), b.multiply(y, y))

    check_gradients(build, inputs, seed)


@SETTINGS
@given(shape=shapes, seed=seeds)
def test_clamp_with_scalar_bounds(shape: tuple[int, ...], seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.choice([-1.5, -0.5, 0.0, 0.5, 1.5], shape) + rng.uniform(-0.2, 0.2, shape)
    inputs = {"lo": np.array(-1.0), "x": x, "hi": np.array(1.0)}
    check_gradients(lambda b, p: b.clamp(*p), inputs, seed)


@SETTINGS
@given(shape=shapes, seed=seeds)
def test_convert_round_trip(shape: tuple[int, ...], seed: int) -> None:
    """f64 -> f32 -> f64 is linear; a wide step keeps f32 rounding out of the differences."""
    x = np.random.default_rng(seed).normal(size=shape)

    def build(b, p):
        return b.convert(b.multiply(b.convert(p[0], DType.F32),
                                    b.splat(3.0, TensorType(DType.F32, shape))), DType.F64)

    check_gradients(build, {"x": x}, seed, rtol=1e-4, atol=1e-4, step=1e-2)


def test_comparisons_and_rounding_carry_no_gradient() -> None:
    x = np.array([0.3, -1.2, 2.5])

    def build(b, p):
        rounded = b.floor(p[0])
        sign = b.sign(p[0])
        return b.add(b.multiply(p[0], b.add(rounded, sign)), b.convert(
            b.compare(p[0], b.splat(0.0, p[0].type), direction="LT"), DType.F64))

    check_gradients(build, {"x": x})
