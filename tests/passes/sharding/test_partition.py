"""shard-partition: per-core shapes, one collective per reshard, the same numbers as one core.

Each case annotates a few values, propagates, partitions, checks which collectives appear
and runs the SPMD module on two in-process cores against the unpartitioned module.
"""

from __future__ import annotations

import pytest

from tests.passes.pass_check import check
from tests.passes.sharding.ir_check import (
    COMPUTATIONS,
    assert_same_results,
    collectives,
    partitioned,
)

CASES = {
    # split -> replicated: all_gather
    "all_gather": ("""module @m {
  func @main(%x: f32[8,4] sharding<[2,1]>) -> (f32[8,4]) {
    %0 = exp(%x) : f32[8,4]
    %1 = negate(%0) : f32[8,4] sharding<replicated>
    return %1
  }""", ["all_gather"]),
    # partial -> split: reduce_scatter
    "reduce_scatter": ("""module @m {
  func @main(%h: f32[8,6] sharding<[1,2]>, %w: f32[6,4]) -> (f32[8,4]) {
    %0 = dot_general(%h, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[8,4] sharding<[1,1,2] partial sum>
    %1 = negate(%0) : f32[8,4] sharding<[2,1]>
    return %1
  }""", ["reduce_scatter"]),
    # split 0 -> split 1: all_to_all
    "all_to_all": ("""module @m {
  func @main(%x: f32[4,6] sharding<[2,1]>) -> (f32[4,6]) {
    %0 = tanh(%x) : f32[4,6] sharding<[2,1]>
    %1 = negate(%0) : f32[4,6] sharding<[1,2]>
    return %1
  }""", ["all_to_all"]),
    # reversing a split dimension swaps the blocks: collective_permute
    "collective_permute": ("""module @m {
  func @main(%x: f32[8,3] sharding<[2,1]>) -> (f32[8,3]) {
    %0 = reverse(%x) {dimensions = [0]} : f32[8,3] sharding<[2,1]>
    return %0
  }""", ["collective_permute"]),
    # reducing a split dimension leaves a partial max: all_reduce max
    "partial_max": ("""module @m {
  func @main(%x: f32[4,8] sharding<[1,2]>) -> (f32[4]) {
    %z = constant() {value = splat<f32[]: -inf>} : f32[]
    %0 = reduce(%x, %z) {dimensions = [1], computation = @max} : f32[4]
    return %0
  }""", ["all_reduce"]),
    # row-parallel matmul, bias added after the all-reduce
    "row_parallel": ("""module @m {
  func @main(%h: f32[4,16] sharding<[1,2]>, %w: f32[16,8], %b: f32[4,8]) -> (f32[4,8]) {
    %0 = dot_general(%h, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[4,8] sharding<[1,1,2] partial sum>
    %1 = add(%0, %b) : f32[4,8]
    return %1
  }""", ["all_reduce"]),
    # a split value joining a partial sum is placed in zeros locally, no collective
    "split_to_partial": ("""module @m {
  func @main(%h: f32[4,6] sharding<[1,2]>, %w: f32[6,4], %y: f32[4,4] sharding<[2,1]>) -> (f32[4,4]) {
    %0 = dot_general(%h, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[4,4] sharding<[1,1,2] partial sum>
    %1 = add(%0, %y) : f32[4,4] sharding<[1,1,2] partial sum>
    return %1
  }""", ["all_reduce"]),
    # iota split on its counted dimension: each core adds its offset
    "iota_offset": ("""module @m {
  func @main(%x: s32[8,2] sharding<[2,1]>) -> (s32[8,2]) {
    %0 = iota() {dtype = s32, shape = [8, 2], dimension = 0} : s32[8,2]
    %1 = add(%x, %0) : s32[8,2]
    return %1
  }""", []),
    # broadcast, batch-split softmax: no collective
    "softmax_rows": ("""module @m {
  func @main(%x: f32[4,8] sharding<[2,1]>) -> (f32[4,8]) {
    %z = constant() {value = splat<f32[]: -inf>} : f32[]
    %0 = reduce(%x, %z) {dimensions = [1], computation = @max} : f32[4]
    %1 = broadcast_in_dim(%0) {shape = [4, 8], broadcast_dimensions = [0]} : f32[4,8]
    %2 = subtract(%x, %1) : f32[4,8]
    %3 = exp(%2) : f32[4,8]
    return %3
  }""", []),
    # an uneven dimension stays replicated
    "uneven": ("""module @m {
  func @main(%x: f32[5,3] sharding<[2,1]>, %w: f32[3,7]) -> (f32[5,7]) {
    %0 = dot_general(%x, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[5,7]
    return %0
  }""", []),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_reshards_and_numbers(name: str) -> None:
    body, expected = CASES[name]
    original, spmd = partitioned(body + COMPUTATIONS, "shard-propagate", "shard-partition")
    assert collectives(spmd) == expected
    assert_same_results(original, spmd)


def test_choose_propagate_partition_megatron_mlp() -> None:
    """With weights as constants the cost model picks column then row: one all_reduce."""
    import numpy as np

    from nxcc.ir.attributes import Dense
    from nxcc.ir.printer import format_dense

    rng = np.random.default_rng(0)
    w1 = format_dense(Dense.of(rng.standard_normal((16, 32)).astype(np.float32)))
    w2 = format_dense(Dense.of(rng.standard_normal((32, 16)).astype(np.float32)))
    text = f"""module @mlp {{
  func @main(%x: f32[2,16]) -> (f32[2,16]) {{
    %w1 = constant() {{value = {w1}}} : f32[16,32]
    %h = dot_general(%x, %w1) {{lhs_contracting_dims = [1], rhs_contracting_dims = [0]}} : f32[2,32]
    %a = tanh(%h) : f32[2,32]
    %w2 = constant() {{value = {w2}}} : f32[32,16]
    %y = dot_general(%a, %w2) {{lhs_contracting_dims = [1], rhs_contracting_dims = [0]}} : f32[2,16]
    return %y
  }}
}}"""
    original, spmd = partitioned(text, "shard-choose", "shard-propagate", "shard-partition")
    assert collectives(spmd) == ["all_reduce"]
    dots = [op for op in spmd.entry_function.body if op.opcode == "dot_general"]
    assert [str(op.result.sharding) for op in dots] == [
        "sharding<[1,2]>", "sharding<[1,1,2] partial sum>"]
    assert_same_results(original, spmd)


def test_partition_text() -> None:
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
        ("shard-propagate", "shard-partition"),
        """\
        module @m {
          func @main(%h: f32[4,8] sharding<[1,2]>, %w: f32[8,8] sharding<[2,1]>, %b: f32[4,8] sharding<replicated>) -> (f32[4,8]) {
            %0 = dot_general(%h, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[4,8] sharding<[1,1,2] partial sum>
            %0.reduced = all_reduce(%0) {reduction = sum, replica_groups = [[0, 1]], channel_id = 1} : f32[4,8] sharding<replicated>
            %1 = add(%0.reduced, %b) : f32[4,8] sharding<replicated>
            %2 = tanh(%1) : f32[4,8] sharding<replicated>
            return %2
          }
        }
        """,
    )
