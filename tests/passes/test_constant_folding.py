"""fold, as text tests: constants computed at compile time, splats kept small."""

from __future__ import annotations

from nxcc.ir.parser import parse_module
from nxcc.passes.constant_folding import ConstantFolding
from tests.passes.pass_check import check


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
