"""The Megatron-LM start of the search: weight matmuls alternate column- and row-parallel
along the dataflow; matmuls of two activations are left to propagation."""

from __future__ import annotations

import textwrap

from nxcc.ir.parser import parse_module
from nxcc.passes.sharding.search import ChoiceSearch
from nxcc.passes.sharding.tensor_parallel import tensor_parallel_start

BLOCKS = """module @m {
  func @main(%x: f32[8,16]) -> (f32[8,16]) {
    %w1 = constant() {value = splat<f32[16,32]: 0.5>} : f32[16,32]
    %w2 = constant() {value = splat<f32[32,16]: 0.25>} : f32[32,16]
    %w3 = constant() {value = splat<f32[16,16]: 0.125>} : f32[16,16]
    %h = dot_general(%x, %w1) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[8,32]
    %a = tanh(%h) : f32[8,32]
    %y = dot_general(%a, %w2) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[8,16]
    %r = add(%x, %y) : f32[8,16]
    %s = dot_general(%r, %r) {lhs_contracting_dims = [1], rhs_contracting_dims = [1]} : f32[8,8]
    %z = dot_general(%r, %w3) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[8,16]
    %o = add(%z, %r) : f32[8,16]
    return %o
  }
}
"""


def test_column_then_row_then_a_new_block() -> None:
    module = parse_module(textwrap.dedent(BLOCKS))
    search = ChoiceSearch(module.entry_function, 2, module)
    start = tensor_parallel_start(search.anchors, search.options)
    names = [start[id(op)].kind if id(op) in start else None for op in search.anchors]
    # h: column; y: row (after a column split through tanh); s: two activations, free;
    # z: after the row block's all-reduce, column again
    assert names == ["column", "row", None, "column"]
