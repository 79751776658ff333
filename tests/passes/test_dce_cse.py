"""dce and cse, as text tests."""

from __future__ import annotations

from tests.passes.pass_check import check


def test_dce_removes_dead_chains_and_unused_functions() -> None:
    check(
        """\
        module @m {
          func @main(%x: f32[4]) -> (f32[4]) {
            %a = exp(%x) : f32[4]
            %b = negate(%a) : f32[4]
            %c = log(%x) : f32[4]
            return %c
          }
          func @unused(%a: f32[], %b: f32[]) -> (f32[]) {
            %0 = add(%a, %b) : f32[]
            return %0
          }
        }
        """,
        ("dce",),
        """\
        module @m {
          func @main(%x: f32[4]) -> (f32[4]) {
            %c = log(%x) : f32[4]
            return %c
          }
        }
        """,
    )


def test_cse_merges_equal_ops_and_equal_constants() -> None:
    check(
        """\
        module @m {
          func @main(%x: f32[2]) -> (f32[2]) {
            %k1 = constant() {value = dense<f32[2]: [1.0, 2.0]>} : f32[2]
            %k2 = constant() {value = dense<f32[2]: [1.0, 2.0]>} : f32[2]
            %a = add(%x, %k1) : f32[2]
            %b = add(%x, %k2) : f32[2]
            %s = multiply(%a, %b) : f32[2]
            return %s
          }
        }
        """,
        ("cse",),
        """\
        module @m {
          func @main(%x: f32[2]) -> (f32[2]) {
            %k1 = constant() {value = dense<f32[2]: [1.0, 2.0]>} : f32[2]
            %a = add(%x, %k1) : f32[2]
            %s = multiply(%a, %a) : f32[2]
            return %s
          }
        }
        """,
    )


def test_cse_keeps_ops_with_different_attributes() -> None:
    text = """\
        module @m {
          func @main(%x: f32[2]) -> (pred[2], pred[2]) {
            %a = compare(%x, %x) {direction = LT} : pred[2]
            %b = compare(%x, %x) {direction = GT} : pred[2]
            return %a, %b
          }
        }
        """
    check(text, ("cse",), text)
