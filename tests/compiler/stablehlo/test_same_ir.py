"""StableHLO text and HLO text of one program lower to the same IR (names aside).

The frontend converts MLIR into the HLO syntax tree the HLO parser builds, so the lowering
is shared. JAX's HLO text is itself a translation of the StableHLO with a few rewrites of
XLA's own (a broadcast that only adds unit dimensions printed as a reshape, `x * 1` folded,
operands of commutative ops swapped, a while's state reordered), so the programs are compared
where JAX's translation is literal, and, for the rest, after -O2 (fold, cse, dce) where
that makes them agree; hand-written pairs cover each op family directly.
"""

from __future__ import annotations

import pytest

from nxcc.compiler.hlo import import_hlo
from nxcc.compiler.stablehlo.frontend import import_xla
from nxcc.ir.core import Module
from nxcc.ir.printer import print_module
from nxcc.passes.manager import PassManager
from nxcc.passes.registry import pipeline
from tests.compiler.stablehlo.helpers import FIXTURES, normalise_names

SAME_AS_LOWERED = ("called_twice", "cnn", "cond_switch", "rng", "top_k",
                   "sharded_contraction_matmul", "sharded_row_sum")
SAME_AFTER_O2 = ("conds", "misc", "mixed", "sorting", "wide")


def text(module: Module, optimise: bool = False) -> str:
    if optimise:
        PassManager(pipeline(2), emit=lambda _: None).run(module)
    return normalise_names(print_module(module))


@pytest.mark.parametrize("name", SAME_AS_LOWERED)
def test_stablehlo_and_hlo_text_give_the_same_ir(name: str) -> None:
    assert text(import_xla(str(FIXTURES / f"{name}.mlir"))) == \
        text(import_hlo(str(FIXTURES / f"{name}.hlo")))


@pytest.mark.parametrize("name", SAME_AS_LOWERED + SAME_AFTER_O2)
def test_stablehlo_and_hlo_text_give_the_same_optimised_ir(name: str) -> None:
    assert text(import_xla(str(FIXTURES / f"{name}.mlir")), True) == \
        text(import_hlo(str(FIXTURES / f"{name}.hlo")), True)


@pytest.mark.parametrize("name", ("mlp", "scan_layers", "cond_switch", "sorting", "indexing",
                                  "convs"))
def test_pretty_generic_and_located_forms_give_the_same_ir(name: str) -> None:
    forms = [text(import_xla(str(FIXTURES / f"{name}{suffix}.mlir")))
             for suffix in ("", "_generic", "_locs")]
    assert forms[0] == forms[1] == forms[2]


PAIRS = {
    "elementwise, compare, select, broadcast, constant": ("""
module @m {
  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<3xf32>) -> tensor<2x3xf32> {
    %cst = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
    %0 = stablehlo.add %arg1, %cst : tensor<3xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
    %2 = stablehlo.compare GT, %arg0, %1, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %3 = stablehlo.select %2, %arg0, %1 : tensor<2x3xi1>, tensor<2x3xf32>
    %4 = stablehlo.exponential_minus_one %3 : tensor<2x3xf32>
    return %4 : tensor<2x3xf32>
  }
}""", """
HloModule m
ENTRY main {
  a = f32[2,3] parameter(0)
  b = f32[3] parameter(1)
  c = f32[3] constant({1, 2, 3})
  s = f32[3] add(b, c)
  bc = f32[2,3] broadcast(s), dimensions={1}
  gt = pred[2,3] compare(a, bc), direction=GT, type=FLOAT
  sel = f32[2,3] select(gt, a, bc)
  ROOT e = f32[2,3] exponential-minus-one(sel)
}"""),
    "dot_general, reduce with a body, transpose, slice, pad, concatenate": ("""
module @m {
  func.func public @main(%arg0: tensor<2x4x3xf32>, %arg1: tensor<2x3x5xf32>) -> (tensor<2xf32>, tensor<6x1xf32>) {
    %0 = stablehlo.dot_general %arg0, %arg1, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x3xf32>, tensor<2x3x5xf32>) -> tensor<2x4x5xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) across dimensions = [1, 2] : (tensor<2x4x5xf32>, tensor<f32>) -> tensor<2xf32>
     reducer(%a: tensor<f32>, %b: tensor<f32>)  {
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }
    %2 = stablehlo.transpose %0, dims = [2, 1, 0] : (tensor<2x4x5xf32>) -> tensor<5x4x2xf32>
    %3 = stablehlo.slice %2 [0:5:2, 1:2, 0:1] : (tensor<5x4x2xf32>) -> tensor<3x1x1xf32>
    %4 = stablehlo.reshape %3 : (tensor<3x1x1xf32>) -> tensor<3x1xf32>
    %5 = stablehlo.pad %4, %cst, low = [1, 0], high = [0, 0], interior = [0, 0] : (tensor<3x1xf32>, tensor<f32>) -> tensor<4x1xf32>
    %6 = stablehlo.concatenate %5, %4, dim = 0 : (tensor<4x1xf32>, tensor<3x1xf32>) -> tensor<7x1xf32>
    %7 = stablehlo.slice %6 [1:7, 0:1] : (tensor<7x1xf32>) -> tensor<6x1xf32>
    return %1, %7 : tensor<2xf32>, tensor<6x1xf32>
  }
}""", """
HloModule m
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ENTRY main {
  x = f32[2,4,3] parameter(0)
  y = f32[2,3,5] parameter(1)
  d = f32[2,4,5] dot(x, y), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  z = f32[] constant(0)
  r = f32[2] reduce(d, z), dimensions={1,2}, to_apply=max
  t = f32[5,4,2] transpose(d), dimensions={2,1,0}
  s = f32[3,1,1] slice(t), slice={[0:5:2], [1:2], [0:1]}
  rs = f32[3,1] reshape(s)
  p = f32[4,1] pad(rs, z), padding=1_0x0_0
  c = f32[7,1] concatenate(p, rs), dimensions={0}
  s2 = f32[6,1] slice(c), slice={[1:7], [0:1]}
  ROOT out = (f32[2], f32[6,1]) tuple(r, s2)
}"""),
    "while with a captured value, case with captures, call": ("""
module @m {
  func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i32>, tensor<4xf32>
    cond {
      %1 = stablehlo.compare LT, %iterArg, %arg1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %c1 = stablehlo.constant dense<1> : tensor<i32>
      %1 = stablehlo.add %iterArg, %c1 : tensor<i32>
      %2 = func.call @twice(%iterArg_0) : (tensor<4xf32>) -> tensor<4xf32>
      stablehlo.return %1, %2 : tensor<i32>, tensor<4xf32>
    }
    %3 = "stablehlo.case"(%arg1) ({
      %4 = stablehlo.negate %arg0 : tensor<4xf32>
      stablehlo.return %4 : tensor<4xf32>
    }, {
      %4 = stablehlo.multiply %arg0, %0#1 : tensor<4xf32>
      stablehlo.return %4 : tensor<4xf32>
    }) : (tensor<i32>) -> tensor<4xf32>
    return %0#1, %3 : tensor<4xf32>, tensor<4xf32>
  }
  func.func private @twice(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}""", """
HloModule m
twice {
  x = f32[4] parameter(0)
  ROOT s = f32[4] add(x, x)
}
cond {
  p = (s32[], f32[4], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=2
  ROOT lt = pred[] compare(i, n), direction=LT, type=SIGNED
}
body {
  p = (s32[], f32[4], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  v = f32[4] get-tuple-element(p), index=1
  n = s32[] get-tuple-element(p), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  v2 = f32[4] call(v), to_apply=twice
  ROOT t = (s32[], f32[4], s32[]) tuple(i1, v2, n)
}
b0 {
  x = f32[4] parameter(0)
  ROOT n = f32[4] negate(x)
}
b1 {
  p = (f32[4], f32[4]) parameter(0)
  x = f32[4] get-tuple-element(p), index=0
  w = f32[4] get-tuple-element(p), index=1
  ROOT m = f32[4] multiply(x, w)
}
ENTRY main {
  a = f32[4] parameter(0)
  k = s32[] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[4], s32[]) tuple(zero, a, k)
  w = (s32[], f32[4], s32[]) while(init), condition=cond, body=body
  v = f32[4] get-tuple-element(w), index=1
  ops = (f32[4], f32[4]) tuple(a, v)
  c = f32[4] conditional(k, a, ops), branch_computations={b0, b1}
  ROOT out = (f32[4], f32[4]) tuple(v, c)
}"""),
    "custom_call topk and Sharding, composite, if": ("""
module @m {
  func.func public @main(%arg0: tensor<3x5xf32>, %arg1: tensor<i1>) -> (tensor<3x2xf32>, tensor<3x2xi32>, tensor<3x5xf32>) {
    %0 = stablehlo.custom_call @Sharding(%arg0) {backend_config = "", mhlo.sharding = "{replicated}"} : (tensor<3x5xf32>) -> tensor<3x5xf32>
    %1:2 = stablehlo.custom_call @mhlo.topk(%0) {mhlo.attributes = {k = 2 : i64, largest = true}, mhlo.version = 1 : i64} : (tensor<3x5xf32>) -> (tensor<3x2xf32>, tensor<3x2xi32>)
    %2 = stablehlo.composite "my.double" %0 {composite_attributes = {factor = 2 : i64}, decomposition = @double} : (tensor<3x5xf32>) -> tensor<3x5xf32>
    %3 = "stablehlo.if"(%arg1) ({
      stablehlo.return %2 : tensor<3x5xf32>
    }, {
      %4 = stablehlo.negate %0 : tensor<3x5xf32>
      stablehlo.return %4 : tensor<3x5xf32>
    }) : (tensor<i1>) -> tensor<3x5xf32>
    return %1#0, %1#1, %3 : tensor<3x2xf32>, tensor<3x2xi32>, tensor<3x5xf32>
  }
  func.func private @double(%arg0: tensor<3x5xf32>) -> tensor<3x5xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<3x5xf32>
    return %0 : tensor<3x5xf32>
  }
}""", """
HloModule m
double {
  x = f32[3,5] parameter(0)
  ROOT s = f32[3,5] add(x, x)
}
t {
  x = f32[3,5] parameter(0)
  ROOT c = f32[3,5] copy(x)
}
f {
  x = f32[3,5] parameter(0)
  ROOT n = f32[3,5] negate(x)
}
ENTRY main {
  a = f32[3,5] parameter(0)
  p = pred[] parameter(1)
  s = f32[3,5] custom-call(a), custom_call_target="Sharding", sharding={replicated}
  k = (f32[3,2], s32[3,2]) topk(s), k=2, largest=true
  v = f32[3,2] get-tuple-element(k), index=0
  i = s32[3,2] get-tuple-element(k), index=1
  d = f32[3,5] call(s), to_apply=double
  c = f32[3,5] conditional(p, d, s), true_computation=t, false_computation=f
  ROOT out = (f32[3,2], s32[3,2], f32[3,5]) tuple(v, i, c)
}"""),
    "collectives of a shard_map body": ("""
module @m attributes {mhlo.num_partitions = 2 : i32} {
  func.func public @main(%arg0: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<4x8xf32>, tensor<2x8xf32>) {
    %0 = "stablehlo.all_reduce"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %1 = "stablehlo.all_gather"(%0) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}> : (tensor<2x8xf32>) -> tensor<4x8xf32>
    %2 = "stablehlo.collective_permute"(%0) <{channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
    return %0, %1, %2 : tensor<2x8xf32>, tensor<4x8xf32>, tensor<2x8xf32>
  }
}""", """
HloModule m, num_partitions=2
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[2,8] parameter(0)
  r = f32[2,8] all-reduce(x), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum
  g = f32[4,8] all-gather(r), channel_id=2, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true
  p = f32[2,8] collective-permute(r), channel_id=3, source_target_pairs={{0,1},{1,0}}
  ROOT t = (f32[2,8], f32[4,8], f32[2,8]) tuple(r, g, p)
}"""),
}


@pytest.mark.parametrize("pair", list(PAIRS.values()), ids=list(PAIRS))
def test_hand_written_pairs_give_the_same_ir(pair: tuple[str, str]) -> None:
    mlir, hlo = pair
    assert text(import_xla(mlir)) == text(import_hlo(hlo))
