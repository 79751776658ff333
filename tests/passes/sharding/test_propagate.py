"""shard-propagate, as text tests: shardings spread forward and backward from annotations."""

from __future__ import annotations

from tests.passes.pass_check import check


def test_forward_through_elementwise_and_reduce() -> None:
    check(
        """\
        module @m {
          func @main(%x: f32[8,16] sharding<[2,1]>, %y: f32[8,16]) -> (f32[8]) {
            %0 = add(%x, %y) : f32[8,16]
            %1 = tanh(%0) : f32[8,16]
            %z = constant() {value = splat<f32[]: 0.0>} : f32[]
            %2 = reduce(%1, %z) {dimensions = [1], computation = @sum} : f32[8]
            return %2
          }
          func @sum(%a: f32[], %b: f32[]) -> (f32[]) {
            %0 = add(%a, %b) : f32[]
            return %0
          }
        }
        """,
        ("shard-propagate",),
        """\
        module @m {
          func @main(%x: f32[8,16] sharding<[2,1]>, %y: f32[8,16] sharding<[2,1]>) -> (f32[8]) {
            %0 = add(%x, %y) : f32[8,16] sharding<[2,1]>
            %1 = tanh(%0) : f32[8,16] sharding<[2,1]>
            %z = constant() {value = splat<f32[]: 0.0>} : f32[]
            %2 = reduce(%1, %z) {dimensions = [1], computation = @sum} : f32[8] sharding<[2]>
            return %2
          }
          func @sum(%a: f32[], %b: f32[]) -> (f32[]) {
            %0 = add(%a, %b) : f32[]
            return %0
          }
        }
        """,
    )


def test_backward_from_a_column_parallel_result() -> None:
    check(
        """\
        module @m {
          func @main(%x: f32[4,16], %w: f32[16,8], %b: f32[4,8]) -> (f32[4,8]) {
            %0 = dot_general(%x, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[4,8] sharding<[1,2]>
            %1 = add(%0, %b) : f32[4,8]
            %2 = tanh(%1) : f32[4,8]
            return %2
          }
        }
        """,
        ("shard-propagate",),
        """\
        module @m {
          func @main(%x: f32[4,16] sharding<replicated>, %w: f32[16,8] sharding<[1,2]>, %b: f32[4,8] sharding<[1,2]>) -> (f32[4,8]) {
            %0 = dot_general(%x, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[4,8] sharding<[1,2]>
            %1 = add(%0, %b) : f32[4,8] sharding<[1,2]>
            %2 = tanh(%1) : f32[4,8] sharding<[1,2]>
            return %2
          }
        }
        """,
    )


def test_a_partial_sum_is_reduced_before_a_replicated_operand() -> None:
    check(
        """\
        module @m {
          func @main(%h: f32[4,16] sharding<[1,2]>, %w: f32[16,8], %b: f32[4,8]) -> (f32[4,8]) {
            %0 = dot_general(%h, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[4,8] sharding<[1,1,2] partial sum>
            %1 = add(%0, %b) : f32[4,8]
            %2 = tanh(%1) : f32[4,8]
            return %2
          }
        }
        """,
        ("shard-propagate",),
        """\
        module @m {
          func @main(%h: f32[4,16] sharding<[1,2]>, %w: f32[16,8] sharding<[2,1]>, %b: f32[4,8] sharding<replicated>) -> (f32[4,8]) {
            %0 = dot_general(%h, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[4,8] sharding<[1,1,2] partial sum>
            %1 = add(%0, %b) : f32[4,8] sharding<replicated>
            %2 = tanh(%1) : f32[4,8] sharding<replicated>
            return %2
          }
        }
        """,
    )


def test_heads_split_through_reshape_and_transpose() -> None:
    check(
        """\
        module @m {
          func @main(%q: f32[2,8,16] sharding<[1,1,2]>) -> (f32[2,4,8,4]) {
            %0 = reshape(%q) {shape = [2, 8, 4, 4]} : f32[2,8,4,4]
            %1 = transpose(%0) {permutation = [0, 2, 1, 3]} : f32[2,4,8,4]
            return %1
          }
        }
        """,
        ("shard-propagate",),
        """\
        module @m {
          func @main(%q: f32[2,8,16] sharding<[1,1,2]>) -> (f32[2,4,8,4]) {
            %0 = reshape(%q) {shape = [2, 8, 4, 4]} : f32[2,8,4,4] sharding<[1,1,2,1]>
            %1 = transpose(%0) {permutation = [0, 2, 1, 3]} : f32[2,4,8,4] sharding<[1,2,1,1]>
            return %1
          }
        }
        """,
    )


def test_broadcast_of_a_replicated_value_is_not_split_from_nowhere() -> None:
    check(
        """\
        module @m {
          func @main(%x: f32[4] sharding<replicated>) -> (f32[4,6]) {
            %0 = broadcast_in_dim(%x) {shape = [4, 6], broadcast_dimensions = [0]} : f32[4,6]
            return %0
          }
        }
        """,
        ("shard-propagate",),
        """\
        module @m {
          func @main(%x: f32[4] sharding<replicated>) -> (f32[4,6]) {
            %0 = broadcast_in_dim(%x) {shape = [4, 6], broadcast_dimensions = [0]} : f32[4,6] sharding<replicated>
            return %0
          }
        }
        """,
    )


def test_uneven_annotation_is_replicated_not_an_error() -> None:
    check(
        """\
        module @m {
          func @main(%x: f32[5,3] sharding<[2,1]>) -> (f32[5,3]) {
            %0 = exp(%x) : f32[5,3]
            return %0
          }
        }
        """,
        ("shard-propagate",),
        """\
        module @m {
          func @main(%x: f32[5,3] sharding<replicated>) -> (f32[5,3]) {
            %0 = exp(%x) : f32[5,3] sharding<replicated>
            return %0
          }
        }
        """,
    )
