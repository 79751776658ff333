"""shard-split-fused: a fused projection only ever sliced apart becomes one projection per
slice (IR text in and out; the same numbers), and what it must leave alone."""

from __future__ import annotations

import numpy as np

from nxcc.ir.interpreter import IRContext
from tests.passes.pass_check import check
from tests.passes.sharding.ir_check import partitioned, random_inputs, text

FUSED_QKV = """module @m {
  func @main(%x: f32[4,8], %w: f32[8,12], %b: f32[4,12]) -> (f32[4,4], f32[4,4], f32[4,4]) {
    %0 = dot_general(%x, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[4,12]
    %1 = add(%b, %0) : f32[4,12]
    %q = slice(%1) {start_indices = [0, 0], limit_indices = [4, 4], strides = [1, 1]} : f32[4,4]
    %k = slice(%1) {start_indices = [0, 4], limit_indices = [4, 8], strides = [1, 1]} : f32[4,4]
    %v = slice(%1) {start_indices = [0, 8], limit_indices = [4, 12], strides = [1, 1]} : f32[4,4]
    return %q, %k, %v
  }
}
"""


def test_fused_qkv_becomes_three_projections() -> None:
    check(FUSED_QKV, ("shard-split-fused", "dce"), """\
module @m {
  func @main(%x: f32[4,8], %w: f32[8,12], %b: f32[4,12]) -> (f32[4,4], f32[4,4], f32[4,4]) {
    %0 = slice(%w) {start_indices = [0, 0], limit_indices = [8, 4], strides = [1, 1]} : f32[8,4]
    %1 = dot_general(%x, %0) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[4,4]
    %2 = slice(%w) {start_indices = [0, 4], limit_indices = [8, 8], strides = [1, 1]} : f32[8,4]
    %3 = dot_general(%x, %2) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[4,4]
    %4 = slice(%w) {start_indices = [0, 8], limit_indices = [8, 12], strides = [1, 1]} : f32[8,4]
    %5 = dot_general(%x, %4) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[4,4]
    %6 = slice(%b) {start_indices = [0, 0], limit_indices = [4, 4], strides = [1, 1]} : f32[4,4]
    %q = add(%6, %1) : f32[4,4]
    %7 = slice(%b) {start_indices = [0, 4], limit_indices = [4, 8], strides = [1, 1]} : f32[4,4]
    %k = add(%7, %3) : f32[4,4]
    %8 = slice(%b) {start_indices = [0, 8], limit_indices = [4, 12], strides = [1, 1]} : f32[4,4]
    %v = add(%8, %5) : f32[4,4]
    return %q, %k, %v
  }
}
""")


def test_split_projections_compute_the_same_numbers() -> None:
    original, split = partitioned(FUSED_QKV, "shard-split-fused", "dce")
    inputs = random_inputs(original)
    want = IRContext(original).call(original.entry, inputs)
    got = IRContext(split).call(split.entry, inputs)
    # the same products, but BLAS may sum a narrower product in another order (numpy 2.4's
    # OpenBLAS does for 2 columns against 6): equal to float32 rounding, not bit for bit
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=4e-7, atol=1e-7)


LEFT_ALONE = {
    # the slices overlap: splitting would compute columns 2..3 twice
    "overlapping": """module @m {
  func @main(%x: f32[4,8], %w: f32[8,6]) -> (f32[4,4], f32[4,4]) {
    %0 = dot_general(%x, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[4,6]
    %1 = slice(%0) {start_indices = [0, 0], limit_indices = [4, 4], strides = [1, 1]} : f32[4,4]
    %2 = slice(%0) {start_indices = [0, 2], limit_indices = [4, 6], strides = [1, 1]} : f32[4,4]
    return %1, %2
  }
}
""",
    # rows of the product come from the lhs, not the weight
    "lhs rows": """module @m {
  func @main(%x: f32[4,8], %w: f32[8,6]) -> (f32[2,6], f32[2,6]) {
    %0 = dot_general(%x, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[4,6]
    %1 = slice(%0) {start_indices = [0, 0], limit_indices = [2, 6], strides = [1, 1]} : f32[2,6]
    %2 = slice(%0) {start_indices = [2, 0], limit_indices = [4, 6], strides = [1, 1]} : f32[2,6]
    return %1, %2
  }
}
""",
    # the product is also used whole
    "other use": """module @m {
  func @main(%x: f32[4,8], %w: f32[8,6]) -> (f32[4,3], f32[4,6]) {
    %0 = dot_general(%x, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[4,6]
    %1 = slice(%0) {start_indices = [0, 0], limit_indices = [4, 3], strides = [1, 1]} : f32[4,3]
    return %1, %0
  }
}
""",
}


def test_what_is_not_a_fused_projection_is_left_alone() -> None:
    for name, source in LEFT_ALONE.items():
        original, after = partitioned(source, "shard-split-fused")
        assert text(after) == text(original), name
