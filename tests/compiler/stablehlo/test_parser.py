"""Pieces of the StableHLO reader: types, dense literals, attribute values, Shardy
shardings, content detection, and the parser's tree for the forms JAX prints."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from nxcc.compiler.hlo.nodes import ArrayShape, TupleShape
from nxcc.compiler.stablehlo.dense import dense_array
from nxcc.compiler.stablehlo.frontend import looks_like_mlir, parse_stablehlo
from nxcc.compiler.stablehlo.parser import parse_mlir
from nxcc.compiler.stablehlo.sdy import sdy_to_hlo_sharding
from nxcc.compiler.stablehlo.syntax import Chain, HashAttr, Word
from nxcc.compiler.stablehlo.types import parse_type
from nxcc.ir.sharding_notation.cursor import PieceError


@pytest.mark.parametrize(("text", "shape"), [
    ("tensor<4x8xf32>", ArrayShape("f32", (4, 8))),
    ("tensor<i1>", ArrayShape("pred", ())),
    ("tensor<2xui32>", ArrayShape("u32", (2,))),
    ("tensor<3x0xbf16>", ArrayShape("bf16", (3, 0))),
    ("tensor<2xcomplex<f32>>", ArrayShape("c64", (2,))),
    ("!stablehlo.token", ArrayShape("token", ())),
])
def test_types(text: str, shape: ArrayShape) -> None:
    assert parse_type(text) == shape


@pytest.mark.parametrize("text", ["tensor<?x4xf32>", "tensor<4xf7>",
                                  "tensor<4xf32, #stablehlo.bounds<8>>"])
def test_types_refused(text: str) -> None:
    with pytest.raises(PieceError):
        parse_type(text)


@pytest.mark.parametrize(("body", "dtype", "dims", "want"), [
    ("0xFF800000", "f32", (), np.float32(-np.inf)),
    ("1.000000e+00", "f32", (2, 2), np.ones((2, 2), np.float32)),
    ("[[1, 2], [3, 4]]", "s32", (2, 2), np.array([[1, 2], [3, 4]], np.int32)),
    ("[true, false]", "pred", (2,), np.array([True, False])),
    ('"0x0000803F00000040"', "f32", (2,), np.array([1.0, 2.0], np.float32)),
    ('"0x0000803F"', "f32", (3,), np.ones(3, np.float32)),
    ("0xFFFFFFFF", "s32", (), np.int32(-1)),
    ("0x3F80", "bf16", (2,), np.ones(2, ml_dtypes.bfloat16)),
])
def test_dense_literals(body: str, dtype: str, dims: tuple, want: np.ndarray) -> None:
    got = dense_array(body, ArrayShape(dtype, dims))
    assert got.dtype == np.asarray(want).dtype and got.shape == dims
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("body", "dtype", "dims", "message"), [
    ("[1, 2, 3]", "s32", (4,), "expected 4 values"),
    ("-5", "u8", (), "does not fit"),
    ("[1, 300]", "s8", (2,), "does not fit"),
    ("[1.0, x]", "f32", (2,), "expected a number"),
])
def test_dense_literal_refused(body: str, dtype: str, dims: tuple, message: str) -> None:
    with pytest.raises(PieceError, match=message):
        dense_array(body, ArrayShape(dtype, dims))


MESH = {"mesh": (("dp", 2), ("tp", 4))}


@pytest.mark.parametrize(("body", "rank", "want"), [
    ('@mesh, [{"dp"}, {}]', 2, "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"),
    ('@mesh, [{}, {"tp"}]', 2, "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"),
    ('@mesh, [{"dp"}, {"tp"}]', 2, "{devices=[2,4]<=[8]}"),
    ('@mesh, [{"tp", "dp"}]', 1, "{devices=[8]<=[2,4]T(1,0)}"),
    ('@mesh, [{}]', 1, "{replicated}"),
    ('@other, [{}]', 1, None),
])
def test_shardy_sharding_as_hlo(body: str, rank: int, want: str | None) -> None:
    assert sdy_to_hlo_sharding(HashAttr("sdy.sharding", body, 0), MESH, rank) == want


def test_detection() -> None:
    assert looks_like_mlir("module @jit_f attributes {} {\n}")
    assert looks_like_mlir('#loc1 = loc("x")\n"builtin.module"() ({\n}) : () -> ()')
    assert looks_like_mlir("// a comment\nfunc.func @main() {\n}")
    assert not looks_like_mlir("HloModule jit_f\n\nENTRY main {\n}")
    assert not looks_like_mlir("ENTRY main {\n  ROOT p = f32[] parameter(0)\n}")


TEXT = """module @jit_f attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xf32> {mhlo.sharding = "{replicated}"}) -> (tensor<4xf32> {jax.result_info = "result"}, tensor<4xi32>) {
    %0 = stablehlo.iota dim = 1 : tensor<4x8xi32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [1] : (tensor<4x8xf32>, tensor<4x8xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)
     reducer(%a: tensor<f32>, %b: tensor<f32>) (%i: tensor<i32>, %j: tensor<i32>)  {
      %2 = stablehlo.compare GT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %3 = stablehlo.select %2, %a, %b : tensor<i1>, tensor<f32>
      %4 = stablehlo.select %2, %i, %j : tensor<i1>, tensor<i32>
      stablehlo.return %3, %4 : tensor<f32>, tensor<i32>
    }
    %5 = stablehlo.dot_general %arg0, %arg0, batching_dims = [0] x [0], contracting_dims = [1] x [1] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4xf32>
    return %5, %1#1 : tensor<4xf32>, tensor<4xi32>
  }
}
"""


def test_the_tree_of_a_pretty_module() -> None:
    mod = parse_mlir(TEXT)
    main = mod.funcs[0]
    assert (mod.name, main.name, main.visibility) == ("jit_f", "main", "public")
    assert main.args[0][2] == {"mhlo.sharding": "{replicated}"}
    ops = main.body.ops  # type: ignore[union-attr]
    reduce = ops[3]
    assert reduce.results == ["%1#0", "%1#1"]
    assert (reduce.operands, reduce.inits) == (["%arg0", "%0"], ["%cst", "%c"])
    # the reducer's block arguments are (lhs0, lhs1, rhs0, rhs1)
    assert [a for a, _ in reduce.regions[0][0].args] == ["%a", "%i", "%b", "%j"]
    dot = ops[4]
    assert dot.attrs["contracting_dims"] == Chain(((1,), (1,)))
    assert ops[0].attrs["dim"] == 1 and ops[1].dense.body == "0xFF800000"  # type: ignore
    assert reduce.regions[0][0].ops[0].words == ["GT", "FLOAT"]
    assert isinstance(Word("x"), Word)


def test_the_hlo_tree_of_a_pretty_module() -> None:
    hlo = parse_stablehlo(TEXT)
    entry = hlo.entry
    assert entry.is_entry and entry.root.opcode == "tuple"
    by_name = {i.name: i for i in entry.instructions}
    assert by_name["arg0"].attr("sharding").kind == "replicated"  # type: ignore[union-attr]
    assert by_name["1"].opcode == "reduce" and by_name["1"].shape == TupleShape(
        (ArrayShape("f32", (4,)), ArrayShape("s32", (4,))))
    assert by_name["1.1"].opcode == "get-tuple-element" and by_name["1.1"].attr("index") == 1
    assert by_name["5"].attr("lhs_batch_dims") == (0,)
    reducer = hlo.computation(by_name["1"].attr("to_apply"))  # type: ignore[arg-type]
    assert reducer is not None and [i.name for i in reducer.instructions[:4]] == [
        "a", "i", "b", "j"]
