"""Every sharding rule: each core op has one, and every strategy of a sample of each op,
imposed on its operands and results, partitions into programs that compute what one core
computes."""

from __future__ import annotations

import pytest

from nxcc.ir.opdef import OP_DEFS
from nxcc.ir.parser import parse_module
from nxcc.ir.printer import print_module
from nxcc.passes.sharding.rules import covered_opcodes, strategies
from tests.passes.sharding.ir_check import COMPUTATIONS, assert_same_results, partitioned

# (params, the op under test as one line); every op reads %x (and %y, %i...).
SAMPLES = {
    "add": ("%x: f32[4,6], %y: f32[4,6]", "%r = add(%x, %y) : f32[4,6]"),
    "multiply": ("%x: f32[4,6], %y: f32[4,6]", "%r = multiply(%x, %y) : f32[4,6]"),
    "divide": ("%x: f32[4,6], %y: f32[4,6]", "%r = divide(%x, %y) : f32[4,6]"),
    "negate": ("%x: f32[4,6]", "%r = negate(%x) : f32[4,6]"),
    "select": ("%p: pred[], %x: f32[4,6], %y: f32[4,6]", "%r = select(%p, %x, %y) : f32[4,6]"),
    "convert": ("%x: f32[4,6]", "%r = convert(%x) {dtype = f64} : f64[4,6]"),
    "broadcast_in_dim": ("%x: f32[4,1]", "%r = broadcast_in_dim(%x) {shape = [2, 4, 6], "
                         "broadcast_dimensions = [1, 2]} : f32[2,4,6]"),
    "reshape": ("%x: f32[4,6]", "%r = reshape(%x) {shape = [2, 2, 6]} : f32[2,2,6]"),
    "reshape_merge": ("%x: f32[2,4,6]", "%r = reshape(%x) {shape = [8, 6]} : f32[8,6]"),
    "transpose": ("%x: f32[4,6]", "%r = transpose(%x) {permutation = [1, 0]} : f32[6,4]"),
    "slice": ("%x: f32[4,6]", "%r = slice(%x) {start_indices = [0, 1], limit_indices = [4, 5], "
              "strides = [1, 1]} : f32[4,4]"),
    "pad": ("%x: f32[4,6], %v: f32[]", "%r = pad(%x, %v) {low = [0, 1], high = [0, 2], "
            "interior = [0, 0]} : f32[4,9]"),
    "concatenate": ("%x: f32[4,6], %y: f32[4,2]", "%r = concatenate(%x, %y) {dimension = 1} : "
                    "f32[4,8]"),
    "reverse": ("%x: f32[4,6]", "%r = reverse(%x) {dimensions = [0, 1]} : f32[4,6]"),
    "iota": ("%x: s32[4,6]", "%r = iota() {dtype = s32, shape = [4, 6], dimension = 1} : "
             "s32[4,6]"),
    "bitcast_convert": ("%x: f32[4,6]", "%r = bitcast_convert(%x) {dtype = s32} : s32[4,6]"),
    "dynamic_slice": ("%x: f32[4,6], %i: s32[], %j: s32[]", "%r = dynamic_slice(%x, %i, %j) "
                      "{slice_sizes = [4, 3]} : f32[4,3]"),
    "dynamic_update_slice": ("%x: f32[4,6], %y: f32[4,2], %i: s32[], %j: s32[]",
                             "%r = dynamic_update_slice(%x, %y, %i, %j) : f32[4,6]"),
    "dot_general": ("%x: f32[2,4,6], %y: f32[2,6,8]", "%r = dot_general(%x, %y) "
                    "{lhs_batch_dims = [0], rhs_batch_dims = [0], lhs_contracting_dims = [2], "
                    "rhs_contracting_dims = [1]} : f32[2,4,8]"),
    "convolution": ("%x: f32[2,4,6,6], %y: f32[6,4,3,3]", "%r = convolution(%x, %y) "
                    "{window_strides = [1, 1], padding = [[1, 1], [1, 1]], lhs_dilation = [1, 1], "
                    "rhs_dilation = [1, 1], input_batch_dim = 0, input_feature_dim = 1, "
                    "input_spatial_dims = [2, 3], kernel_input_feature_dim = 1, "
                    "kernel_output_feature_dim = 0, kernel_spatial_dims = [2, 3], "
                    "output_batch_dim = 0, output_feature_dim = 1, output_spatial_dims = [2, 3]} "
                    ": f32[2,6,6,6]"),
    "grouped_convolution": ("%x: f32[2,4,6,6], %y: f32[4,1,3,3]", "%r = convolution(%x, %y) "
                            "{window_strides = [1, 1], padding = [[0, 0], [0, 0]], "
                            "lhs_dilation = [1, 1], rhs_dilation = [1, 1], "
                            "feature_group_count = 4, input_batch_dim = 0, input_feature_dim = 1,"
                            " input_spatial_dims = [2, 3], kernel_input_feature_dim = 1, "
                            "kernel_output_feature_dim = 0, kernel_spatial_dims = [2, 3], "
                            "output_batch_dim = 0, output_feature_dim = 1, "
                            "output_spatial_dims = [2, 3]} : f32[2,4,4,4]"),
    "reduce_sum": ("%x: f32[4,6]", "%z = constant() {value = splat<f32[]: 0.0>} : f32[]\n"
                   "    %r = reduce(%x, %z) {dimensions = [1], computation = @sum} : f32[4]"),
    "reduce_max": ("%x: f32[4,6]", "%z = constant() {value = splat<f32[]: -inf>} : f32[]\n"
                   "    %r = reduce(%x, %z) {dimensions = [0], computation = @max} : f32[6]"),
    "reduce_window": ("%x: f32[2,4,6], %v: f32[]", "%r = reduce_window(%x, %v) "
                      "{window_dimensions = [1, 2, 2], window_strides = [1, 2, 2], "
                      "base_dilations = [1, 1, 1], window_dilations = [1, 1, 1], "
                      "padding = [[0, 0], [0, 0], [0, 0]], computation = @max} : f32[2,2,3]"),
    "select_and_scatter": ("%x: f32[2,4,4], %y: f32[2,2,2], %v: f32[]",
                           "%r = select_and_scatter(%x, %y, %v) {window_dimensions = [1, 2, 2], "
                           "window_strides = [1, 2, 2], padding = [[0, 0], [0, 0], [0, 0]], "
                           "select = @ge, scatter = @sum} : f32[2,4,4]"),
    "sort": ("%x: f32[4,6]", "%r = sort(%x) {dimension = 1, comparator = @less} : f32[4,6]"),
}


def test_every_core_op_has_a_rule() -> None:
    assert set(OP_DEFS) - covered_opcodes() == set()


def sample(name: str):
    params, line = SAMPLES[name]
    rtype = line.rsplit(" : ", 1)[1]
    text = (f"module @m {{\n  func @main({params}) -> ({rtype}) {{\n    {line}\n"
            f"    return %r\n  }}{COMPUTATIONS}")
    return parse_module(text)


CASES = [(name, i) for name in sorted(SAMPLES)
         for i in range(len(strategies(sample(name).entry_function.body[-1], 2, sample(name))))]


@pytest.mark.parametrize(("name", "index"), CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_every_strategy_computes_the_same(name: str, index: int) -> None:
    module = sample(name)
    op = module.entry_function.body[-1]
    s = strategies(op, 2, module)[index]
    assert strategies(op, 2, module)[0].kind == "replicate"
    for v, want in zip(op.operands, s.operands, strict=True):
        if v.owner is None and not want.is_partial:
            v.sharding = want
    for r, want in zip(op.results, s.results, strict=True):
        r.sharding = want
    original, spmd = partitioned(print_module(module), "shard-propagate", "shard-partition")
    steps = [o for o in spmd.entry_function.body if o.opcode == op.opcode]
    assert steps and steps[-1].results[0].sharding == s.results[0], s.name
    assert_same_results(original, spmd)
