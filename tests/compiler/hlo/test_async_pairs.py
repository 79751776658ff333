"""HLO's -start/-done pairs lower to the IR's <kind>_start/<kind>_done, the done where the HLO
puts it; a start that anything but a -done reads is lowered synchronously."""

from __future__ import annotations

from nxcc.ir.verifier import verify_module
from nxcc.passes.latency_hiding import LatencyHiding
from tests.compiler.hlo.test_lowering import module, ops

PAIR = """
  x = f32[4,8]{1,0} parameter(0)
  ags = (f32[4,8]{1,0}, f32[8,8]{1,0}) all-gather-start(x), dimensions={0}, replica_groups={{0,1}}
  t = f32[4,8]{1,0} tanh(x)
  agd = f32[8,8]{1,0} all-gather-done(ags)
  ars = (f32[4,8]{1,0}, f32[8,8]{1,0}) all-reduce-start(t, agd), replica_groups={{0,1}}, to_apply=add
  ard = (f32[4,8]{1,0}, f32[8,8]{1,0}) all-reduce-done(ars)
  a = f32[4,8]{1,0} get-tuple-element(ard), index=0
  b = f32[8,8]{1,0} get-tuple-element(ard), index=1
  ROOT r = (f32[4,8]{1,0}, f32[8,8]{1,0}) tuple(a, b)"""


def test_pairs_lower_to_start_and_done() -> None:
    m = module(PAIR)
    # lowered in dependence order, each done right after its start ...
    assert ops(m) == ["tanh", "all_gather_start", "all_gather_done", "all_reduce_start",
                      "all_reduce_done"]
    # ... and latency-hiding moves the gather's start before the tanh it overlaps
    assert LatencyHiding().run(m) is True
    verify_module(m)
    assert ops(m) == ["all_gather_start", "tanh", "all_gather_done", "all_reduce_start",
                      "all_reduce_done"]
    body = m.entry_function.body
    start, done = body[3], body[4]
    # one start and one done for the tuple all-reduce: two operands, two results
    assert [v.type.shape for v in done.results] == [(4, 8), (8, 8)]
    assert done.operands[0] is start.results[0] and done.operands[1:] == start.operands
    assert m.entry_function.results == done.results


def test_a_start_read_by_another_op_is_synchronous() -> None:
    m = module(PAIR.replace(
        "  ROOT r = (f32[4,8]{1,0}, f32[8,8]{1,0}) tuple(a, b)",
        "  o = f32[4,8]{1,0} get-tuple-element(ags), index=0\n"
        "  ROOT r = (f32[4,8]{1,0}, f32[8,8]{1,0}, f32[4,8]{1,0}) tuple(a, b, o)"))
    assert ops(m)[:2] == ["tanh", "all_gather"] and "all_gather_start" not in ops(m)
    assert "all_reduce_start" in ops(m)
