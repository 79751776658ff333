"""fold, as text tests: constants computed at compile time, splats kept small."""

from __future__ import annotations

import textwrap

from nxcc.ir.parser import parse_module
from nxcc.passes.constant_folding import ConstantFolding
from tests.passes.pass_check import check, run_passes


def test_folds_arithmetic_on_constants() -> None:
    check(
        """\
        module @m {
          func @main(%x: f32[2]) -> (f32[2]) {
            %a = constant() {value = dense<f32[2]: [1.0, 2.0]>} : f32[2]
            %b = constant() {value = dense<f32[2]: [3.0, 5.0]>} : f32[2]
            %c = multiply(%a, %b) : f32[2]
            %d = add(%x, %c) : f32[2]
            return %d
          }
        }
        """,
        ("fold", "dce"),
        """\
        module @m {
          func @main(%x: f32[2]) -> (f32[2]) {
            %c = constant() {value = dense<f32[2]: [3.0, 10.0]>} : f32[2]
            %d = add(%x, %c) : f32[2]
            return %d
          }
        }
        """,
    )


def test_broadcast_of_a_scalar_stays_a_splat() -> None:
    # exp(2) by numpy's float32 loop: 0.78 ulp below the correctly rounded 7.389056205749512
    check(
        """\
        module @m {
          func @main() -> (f32[1000,1000]) {
            %a = constant() {value = splat<f32[]: 2.0>} : f32[]
            %b = broadcast_in_dim(%a) {shape = [1000, 1000], broadcast_dimensions = []} : f32[1000,1000]
            %c = exp(%b) : f32[1000,1000]
            return %c
          }
        }
        """,
        ("fold", "dce"),
        """\
        module @m {
          func @main() -> (f32[1000,1000]) {
            %c = constant() {value = splat<f32[1000,1000]: 7.3890557289123535>} : f32[1000,1000]
            return %c
          }
        }
        """,
    )


def test_does_not_materialise_a_big_broadcast_of_a_vector() -> None:
    module = parse_module("""\
module @m {
  func @main() -> (f32[1000,1000]) {
    %a = iota() {dtype = f32, shape = [1000], dimension = 0} : f32[1000]
    %b = broadcast_in_dim(%a) {shape = [1000, 1000], broadcast_dimensions = [1]} : f32[1000,1000]
    return %b
  }
}
""")
    ConstantFolding().run(module)
    opcodes = [op.opcode for op in module.entry_function.body]
    assert opcodes[-1] == "broadcast_in_dim"


def test_folds_reduce_through_its_computation() -> None:
    check(
        """\
        module @m {
          func @main() -> (f32[]) {
            %a = constant() {value = dense<f32[3]: [1.0, 2.0, 4.0]>} : f32[3]
            %z = constant() {value = splat<f32[]: 0.0>} : f32[]
            %s = reduce(%a, %z) {dimensions = [0], computation = @add_f32} : f32[]
            return %s
          }
          func @add_f32(%a: f32[], %b: f32[]) -> (f32[]) {
            %0 = add(%a, %b) : f32[]
            return %0
          }
        }
        """,
        ("fold", "dce"),
        """\
        module @m {
          func @main() -> (f32[]) {
            %s = constant() {value = splat<f32[]: 7.0>} : f32[]
            return %s
          }
        }
        """,
    )


def test_an_iota_counts_along_one_dimension_as_a_broadcast_constant() -> None:
    """A [4, 128, 1024] iota along dim 2 (2 MiB, too big to fold whole) becomes the folded
    1-D count broadcast to the shape: the same numbers, and the one-hot comparison reads it
    as a broadcast view."""
    import numpy as np

    from nxcc.ir.interpreter import IRContext

    text = """\
        module @m {
          func @main(%labels: s32[4,128]) -> (pred[4,128,1024]) {
            %i = iota() {dtype = s32, shape = [4, 128, 1024], dimension = 2} : s32[4,128,1024]
            %l = broadcast_in_dim(%labels) {shape = [4, 128, 1024], broadcast_dimensions = [0, 1]} : s32[4,128,1024]
            %eq = compare(%i, %l) {direction = EQ} : pred[4,128,1024]
            return %eq
          }
        }
        """
    got = run_passes(text, "fold")
    assert "iota" not in got and "dense<s32[1024]:" in got
    assert "%i = broadcast_in_dim(%0) {shape = [4, 128, 1024], broadcast_dimensions = [2]}" in got
    labels = np.random.default_rng(0).integers(0, 1024, (4, 128)).astype(np.int32)
    module = parse_module(textwrap.dedent(text))
    want = IRContext(module).call("main", [labels])[0]
    ConstantFolding().run(module)
    np.testing.assert_array_equal(IRContext(module).call("main", [labels])[0], want)
    np.testing.assert_array_equal(want, np.arange(1024) == labels[..., None])


def test_an_iota_of_one_long_dimension_stays() -> None:
    text = """\
        module @m {
          func @main() -> (s32[1,524288,1]) {
            %i = iota() {dtype = s32, shape = [1, 524288, 1], dimension = 1} : s32[1,524288,1]
            return %i
          }
        }
        """
    check(text, ("fold",), text)
