"""The IR's text form: print -> parse -> print is exact for every case file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nxcc.ir import Builder, DType, Function, Module, TensorType, Value
from nxcc.ir.computations import binary_computation
from nxcc.ir.parser import IRParseError, parse_module
from nxcc.ir.printer import print_module
from nxcc.ir.verifier import verify_module

CASES = sorted((Path(__file__).parent / "cases").glob("*.ir"))


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case_file_round_trips_exactly(path: Path) -> None:
    text = path.read_text()
    module = parse_module(text, str(path))
    verify_module(module)
    assert print_module(module) == text
    assert print_module(parse_module(print_module(module))) == text


def test_built_module_round_trips_with_exact_weights() -> None:
    rng = np.random.default_rng(0)
    m = Module("built")
    x = Value(TensorType(DType.F32, (3, 5)), "x")
    fn = m.add_function(Function("main", [x], result_names=["y"]))
    b = Builder(m, fn)
    w = b.constant(rng.standard_normal((5, 7)).astype(np.float32))
    h = b.dot_general(x, w, lhs_contracting_dims=[1], rhs_contracting_dims=[0])
    z = b.constant(np.float32(0))
    s = b.reduce(h, z, dimensions=[0], computation=binary_computation(m, "add", DType.F32))
    fn.results = [s]
    text = print_module(m)
    again = parse_module(text)
    assert print_module(again) == text
    w_again = again.entry_function.body[0].attrs["value"]
    assert w_again == fn.body[0].attrs["value"]


def test_bf16_values_round_trip_bit_exactly() -> None:
    import ml_dtypes

    arr = np.array([1.5, -0.0078125, 3e38, 1e-38], dtype=ml_dtypes.bfloat16)
    m = Module("bf")
    fn = m.add_function(Function("main", []))
    fn.results = [Builder(m, fn).constant(arr)]
    again = parse_module(print_module(m))
    got = again.entry_function.body[0].attrs["value"].array
    assert got.tobytes() == arr.tobytes()


def test_elided_constants_are_refused_by_the_parser() -> None:
    m = Module("e")
    fn = m.add_function(Function("main", []))
    fn.results = [Builder(m, fn).constant(np.arange(100, dtype=np.float32))]
    text = print_module(m, elide_constants_over=16)
    assert "dense<f32[100]: ...>" in text
    with pytest.raises(IRParseError, match="elided constant"):
        parse_module(text)
