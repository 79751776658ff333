"""fold-transpose: dot_generals read transposed operands directly (text tests), with the
same results (numeric tests through the interpreter and the executor's bound steps)."""

from __future__ import annotations

import numpy as np

from nxcc.ir.interpreter import IRContext
from nxcc.ir.parser import parse_module
from nxcc.passes.fold_transpose import FoldTranspose, folded_dims
from tests.passes.pass_check import check

ATTENTION_SCORES = """\
module @m {
  func @main(%q: f32[1,8,2,4], %k: f32[1,8,2,4]) -> (f32[1,2,8,8]) {
    %qt = transpose(%q) {permutation = [0, 2, 1, 3]} : f32[1,2,8,4]
    %kt = transpose(%k) {permutation = [0, 2, 3, 1]} : f32[1,2,4,8]
    %s = dot_general(%qt, %kt) {lhs_batch_dims = [0, 1], rhs_batch_dims = [0, 1], lhs_contracting_dims = [3], rhs_contracting_dims = [2]} : f32[1,2,8,8]
    return %s
  }
}
"""


def test_attention_head_transposes_fold_into_the_product() -> None:
    check(
        ATTENTION_SCORES,
        ("fold-transpose",),
        """\
        module @m {
          func @main(%q: f32[1,8,2,4], %k: f32[1,8,2,4]) -> (f32[1,2,8,8]) {
            %s = dot_general(%q, %k) {lhs_batch_dims = [0, 2], rhs_batch_dims = [0, 2], lhs_contracting_dims = [3], rhs_contracting_dims = [3]} : f32[1,2,8,8]
            return %s
          }
        }
        """,
    )


def test_a_transpose_that_reorders_free_dims_stays() -> None:
    text = """\
        module @m {
          func @main(%x: f32[2,3,4], %w: f32[4,5]) -> (f32[3,2,5]) {
            %t = transpose(%x) {permutation = [1, 0, 2]} : f32[3,2,4]
            %y = dot_general(%t, %w) {lhs_contracting_dims = [2], rhs_contracting_dims = [0]} : f32[3,2,5]
            return %y
          }
        }
        """
    check(text, ("fold-transpose",), text)


def test_a_transpose_with_other_users_is_kept_for_them() -> None:
    check(
        """\
        module @m {
          func @main(%x: f32[4,3], %w: f32[4,5]) -> (f32[3,5], f32[3,4]) {
            %t = transpose(%x) {permutation = [1, 0]} : f32[3,4]
            %y = dot_general(%t, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[3,5]
            return %y, %t
          }
        }
        """,
        ("fold-transpose",),
        """\
        module @m {
          func @main(%x: f32[4,3], %w: f32[4,5]) -> (f32[3,5], f32[3,4]) {
            %t = transpose(%x) {permutation = [1, 0]} : f32[3,4]
            %y = dot_general(%x, %w) {lhs_contracting_dims = [0], rhs_contracting_dims = [0]} : f32[3,5]
            return %y, %t
          }
        }
        """,
    )


def test_folded_dims() -> None:
    assert folded_dims([0, 2, 1, 3], [0, 1], [3]) == ([0, 2], [3])
    assert folded_dims([1, 0, 2], [], [2]) is None  # free dims 0, 1 would swap
    assert folded_dims([1, 0], [], [0]) == ([], [1])


def test_folded_products_compute_the_same_numbers() -> None:
    rng = np.random.default_rng(0)
    q, k = (rng.standard_normal((1, 8, 2, 4)).astype(np.float32) for _ in range(2))
    want = IRContext(parse_module(ATTENTION_SCORES)).call("main", [q, k])[0]
    module = parse_module(ATTENTION_SCORES)
    assert FoldTranspose().run(module)
    assert not any(op.opcode == "transpose" for op in module.entry_function.body)
    got = IRContext(module).call("main", [q, k])[0]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(got, np.einsum("bshd,bthd->bhst", q, k), rtol=1e-5, atol=1e-6)


WEIGHT_GRADIENT = """\
module @m {
  func @main(%dy: f32[2,3,5], %x: f32[2,3,4]) -> (f32[4,5]) {
    %g = dot_general(%dy, %x) {lhs_contracting_dims = [0, 1], rhs_contracting_dims = [0, 1]} : f32[5,4]
    %t = transpose(%g) {permutation = [1, 0]} : f32[4,5]
    return %t
  }
}
"""


def test_a_transposed_product_is_the_product_of_the_swapped_operands() -> None:
    check(
        WEIGHT_GRADIENT,
        ("fold-transpose",),
        """\
        module @m {
          func @main(%dy: f32[2,3,5], %x: f32[2,3,4]) -> (f32[4,5]) {
            %t = dot_general(%x, %dy) {lhs_contracting_dims = [0, 1], rhs_contracting_dims = [0, 1]} : f32[4,5]
            return %t
          }
        }
        """,
    )
    rng = np.random.default_rng(1)
    dy = rng.standard_normal((2, 3, 5)).astype(np.float32)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    module = parse_module(WEIGHT_GRADIENT)
    assert FoldTranspose().run(module)
    got = IRContext(module).call("main", [dy, x])[0]
    np.testing.assert_allclose(got, np.einsum("bsi,bsj->ji", dy, x), rtol=1e-5, atol=1e-6)


def test_a_batched_transposed_product_swaps_with_its_batch_dims_first() -> None:
    check(
        """\
        module @m {
          func @main(%a: f32[2,3,4], %b: f32[2,4,5]) -> (f32[2,5,3]) {
            %p = dot_general(%a, %b) {lhs_batch_dims = [0], rhs_batch_dims = [0], lhs_contracting_dims = [2], rhs_contracting_dims = [1]} : f32[2,3,5]
            %t = transpose(%p) {permutation = [0, 2, 1]} : f32[2,5,3]
            return %t
          }
        }
        """,
        ("fold-transpose",),
        """\
        module @m {
          func @main(%a: f32[2,3,4], %b: f32[2,4,5]) -> (f32[2,5,3]) {
            %t = dot_general(%b, %a) {lhs_batch_dims = [0], rhs_batch_dims = [0], lhs_contracting_dims = [1], rhs_contracting_dims = [2]} : f32[2,5,3]
            return %t
          }
        }
        """,
    )


def test_a_product_with_other_users_is_not_computed_twice() -> None:
    text = """\
        module @m {
          func @main(%dy: f32[2,3,5], %x: f32[2,3,4]) -> (f32[4,5], f32[5,4]) {
            %g = dot_general(%dy, %x) {lhs_contracting_dims = [0, 1], rhs_contracting_dims = [0, 1]} : f32[5,4]
            %t = transpose(%g) {permutation = [1, 0]} : f32[4,5]
            return %t, %g
          }
        }
        """
    check(text, ("fold-transpose",), text)


def test_transposes_of_transposes_compose_or_cancel() -> None:
    check(
        """\
        module @m {
          func @main(%x: f32[2,3,4]) -> (f32[2,3,4], f32[3,4,2]) {
            %a = transpose(%x) {permutation = [1, 0, 2]} : f32[3,2,4]
            %b = transpose(%a) {permutation = [1, 0, 2]} : f32[2,3,4]
            %c = transpose(%a) {permutation = [0, 2, 1]} : f32[3,4,2]
            return %b, %c
          }
        }
        """,
        ("fold-transpose",),
        """\
        module @m {
          func @main(%x: f32[2,3,4]) -> (f32[2,3,4], f32[3,4,2]) {
            %c = transpose(%x) {permutation = [1, 2, 0]} : f32[3,4,2]
            return %x, %c
          }
        }
        """,
    )


def test_a_gradient_transposed_twice_is_one_product() -> None:
    """A product transposed, then transposed back (a tied embedding's gradient): the
    product as it was, with no transpose left."""
    check(
        """\
        module @m {
          func @main(%dy: f32[3,5], %x: f32[3,4]) -> (f32[5,4]) {
            %g = dot_general(%dy, %x) {lhs_contracting_dims = [0], rhs_contracting_dims = [0]} : f32[5,4]
            %t = transpose(%g) {permutation = [1, 0]} : f32[4,5]
            %u = transpose(%t) {permutation = [1, 0]} : f32[5,4]
            return %u
          }
        }
        """,
        ("fold-transpose",),
        """\
        module @m {
          func @main(%dy: f32[3,5], %x: f32[3,4]) -> (f32[5,4]) {
            %u = dot_general(%dy, %x) {lhs_contracting_dims = [0], rhs_contracting_dims = [0]} : f32[5,4]
            return %u
          }
        }
        """,
    )


def test_an_identity_transpose_is_its_operand() -> None:
    """A product's gradient already in its operand's layout: no copy of it is made."""
    check(
        """\
        module @m {
          func @main(%dy: f32[2,3,5], %w: f32[4,5]) -> (f32[2,3,4]) {
            %g = dot_general(%dy, %w) {lhs_contracting_dims = [2], rhs_contracting_dims = [1]} : f32[2,3,4]
            %t = transpose(%g) {permutation = [0, 1, 2]} : f32[2,3,4]
            %n = negate(%t) : f32[2,3,4]
            return %n
          }
        }
        """,
        ("fold-transpose",),
        """\
        module @m {
          func @main(%dy: f32[2,3,5], %w: f32[4,5]) -> (f32[2,3,4]) {
            %g = dot_general(%dy, %w) {lhs_contracting_dims = [2], rhs_contracting_dims = [1]} : f32[2,3,4]
            %n = negate(%g) : f32[2,3,4]
            return %n
          }
        }
        """,
    )
