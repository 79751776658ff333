"""CHLO ops with no HLO opcode (compiler/stablehlo/chlo.py) against Python's math module;
JAX's own outputs for them are the fixtures chlo_math and chlo_math_f64 (test_fixtures)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from nxcc.compiler.hlo.errors import HloError
from nxcc.compiler.stablehlo.frontend import import_xla
from nxcc.driver.compile import compile_model
from nxcc.driver.options import CompileOptions
from tests.compiler.hlo.helpers import load_model

UNARY = {"erfc": math.erfc, "sinh": math.sinh, "cosh": math.cosh, "asin": math.asin,
         "acos": math.acos, "atan": math.atan, "asinh": math.asinh, "acosh": math.acosh,
         "atanh": math.atanh, "square": lambda v: v * v}
DOMAIN = {"erfc": (-6, 12), "sinh": (-20, 20), "cosh": (-20, 20), "asin": (-1, 1),
          "acos": (-1, 1), "atan": (-50, 50), "asinh": (-1e6, 1e6), "acosh": (1, 1e6),
          "atanh": (-1, 1), "square": (-10, 10), "erf_inv": (-1, 1)}
#: the largest relative error allowed, in units of the type's epsilon: float32 results are
#: the float64 formulas rounded once; float64 erfc below 2.5 is 1 - erf (7.1e-13 measured)
BOUND = {"f32": 0.51, "f64": 1.7}
ERFC_F64 = 1e-12
N = 400


def module_text(ops: list[str], dtype: str, n: int = N) -> str:
    t = f"tensor<{n}x{dtype}>"
    body = [f"    %{i} = chlo.{o} %arg0 : {t} -> {t}" for i, o in enumerate(ops)]
    names = ", ".join(f"%{i}" for i in range(len(ops)))
    types = ", ".join([t] * len(ops))
    return ("module @m {\n"
            f"  func.func public @main(%arg0: {t}) -> ({types}) {{\n" + "\n".join(body) +
            f"\n    return {names} : {types}\n  }}\n}}\n")


def run_unary(tmp_path: Path, op: str, dtype: str, x: np.ndarray) -> np.ndarray:
    src = tmp_path / f"{op}.mlir"
    src.write_text(module_text([op], dtype, x.size))
    neff = tmp_path / f"{op}.neff"
    compile_model(str(src), CompileOptions(target="trn1", output=str(neff)),
                  emit=lambda _: None)
    model = load_model(neff)
    out = model.execute({model.inputs[0].name: x})
    return out[model.outputs[0].name]


def sample(op: str, dtype: np.dtype) -> np.ndarray:
    lo, hi = DOMAIN[op]
    rng = np.random.default_rng(3)
    x = rng.uniform(lo, hi, N)
    if op in ("asinh", "acosh"):  # the small values too, not only the large ones
        x[: N // 2] = rng.uniform(-3 if op == "asinh" else 1, 3, N // 2)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_matches_math(op: str, dtype: str, tmp_path: Path) -> None:
    npdt = np.dtype(np.float32 if dtype == "f32" else np.float64)
    x = sample(op, npdt)
    got = run_unary(tmp_path, op, dtype, x).astype(np.float64)
    want = np.array([UNARY[op](float(v)) for v in x])
    ok = np.isfinite(want) & (np.abs(want) > np.finfo(npdt).tiny)  # below: float32 underflow
    rel = np.abs(got[ok] - want[ok]) / np.abs(want[ok])
    bound = ERFC_F64 if (op, dtype) == ("erfc", "f64") else BOUND[dtype] * np.finfo(npdt).eps
    assert rel.max() <= bound, (op, dtype, rel.max())


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_erf_inv_inverts_erf(dtype: str, tmp_path: Path) -> None:
    npdt = np.dtype(np.float32 if dtype == "f32" else np.float64)
    y = sample("erf_inv", npdt)
    y[:5] = (-1.0, 1.0, 0.0, 1.5, -0.999999)
    x = run_unary(tmp_path, "erf_inv", dtype, y)
    assert x[0] == -np.inf and x[1] == np.inf and x[2] == 0 and np.isnan(x[3])
    back = np.array([math.erf(float(v)) for v in x[4:]])
    # erf's slope bounds what rounding x to the type can give back
    assert np.abs(back - y[4:].astype(np.float64)).max() <= 4 * np.finfo(npdt).eps


def digamma(x: float) -> float:
    """The reference: reflection below 1/2, the recurrence up to 20, then the asymptotic
    series (its error far below float64's at 20)."""
    if x <= 0 and x == math.floor(x):
        return math.nan
    if x < 0.5:  # tan(pi x) = tan(pi r), r = x less its nearest integer, exact
        return digamma(1 - x) - math.pi / math.tan(math.pi * (x - round(x)))
    acc = 0.0
    while x < 20:
        acc -= 1 / x
        x += 1
    x2 = 1 / (x * x)
    return acc + math.log(x) - 0.5 / x - x2 * (1 / 12 - x2 * (1 / 120 - x2 * (
        1 / 252 - x2 * (1 / 240 - x2 / 132))))


#: error / max(|value|, 1) allowed (values cross 0 near 1, 2 and 1.46): float32 in units of
#: its epsilon; float64 as measured on 4,000 points (4e-15, 2.1e-15), with a margin
GAMMA_BOUND = {("lgamma", "f32"): 0.51 * 2**-23, ("digamma", "f32"): 0.51 * 2**-23,
               ("lgamma", "f64"): 1e-14, ("digamma", "f64"): 1e-14}


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("op", ["lgamma", "digamma"])
def test_gamma_functions_match_the_reference(op: str, dtype: str, tmp_path: Path) -> None:
    npdt = np.dtype(np.float32 if dtype == "f32" else np.float64)
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(-20, 30, 300), rng.uniform(0, 1e6, 100),
                        [0.0, -3.0, np.inf, np.nan]]).astype(npdt)
    got = run_unary(tmp_path, op, dtype, x).astype(np.float64)
    reference = math.lgamma if op == "lgamma" else digamma
    want = np.array([reference(float(v)) if np.isfinite(v) and not (v <= 0 and v == int(v))
                     else np.nan for v in x[:-4]])
    err = np.abs(got[:-4] - want) / np.maximum(np.abs(want), 1.0)
    assert err.max() <= GAMMA_BOUND[(op, dtype)], (op, dtype, err.max())
    edges = got[-4:]
    if op == "lgamma":
        assert edges[0] == edges[1] == edges[2] == np.inf and np.isnan(edges[3])
    else:
        assert np.isnan(edges[0]) and np.isnan(edges[1]) and edges[2] == np.inf
        assert np.isnan(edges[3])


def test_next_after_and_infinity_tests(tmp_path: Path) -> None:
    src = tmp_path / "m.mlir"
    t, p = "tensor<7xf32>", "tensor<7xi1>"
    src.write_text(
        "module @m {\n"
        f"  func.func public @main(%x: {t}, %y: {t}) -> ({t}, {p}, {p}, {p}) {{\n"
        f"    %0 = chlo.next_after %x, %y : {t}, {t} -> {t}\n"
        f"    %1 = chlo.is_inf %x : {t} -> {p}\n"
        f"    %2 = chlo.is_pos_inf %x : {t} -> {p}\n"
        f"    %3 = chlo.is_neg_inf %x : {t} -> {p}\n"
        f"    return %0, %1, %2, %3 : {t}, {p}, {p}, {p}\n  }}\n}}\n")
    neff = tmp_path / "m.neff"
    compile_model(str(src), CompileOptions(target="trn1", output=str(neff)),
                  emit=lambda _: None)
    model = load_model(neff)
    x = np.array([1.0, 1.0, 0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)
    y = np.array([2.0, 0.0, -1.0, 1.0, 0.0, 0.0, 1.0], np.float32)
    out = model.execute({model.inputs[0].name: x, model.inputs[1].name: y})
    got = [out[o.name] for o in model.outputs]
    np.testing.assert_array_equal(got[0], np.nextafter(x, y))
    np.testing.assert_array_equal(np.signbit(got[0]), np.signbit(np.nextafter(x, y)))
    np.testing.assert_array_equal(got[1], np.isinf(x))
    np.testing.assert_array_equal(got[2], np.isposinf(x))
    np.testing.assert_array_equal(got[3], np.isneginf(x))


def test_an_integer_operand_is_refused_with_the_op_named() -> None:
    text = module_text(["sinh"], "i32", 4)
    with pytest.raises(HloError) as info:
        import_xla(text)
    assert "expected a float operand of chlo.sinh" in info.value.message
    assert info.value.line == 3
