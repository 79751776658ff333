"""latency-hiding: all_reduces split into start/done pairs, scheduled apart."""

from __future__ import annotations

from nxcc.ir.parser import parse_module
from nxcc.ir.printer import print_module
from nxcc.ir.verifier import verify_module
from nxcc.passes.latency_hiding import LatencyHiding

CHAIN = """module @m {
  func @main(%x: f32[4], %w: f32[4]) -> ("a": f32[4], "b": f32[4]) {
    %g = multiply(%x, %w) : f32[4]
    %r = all_reduce(%g) {reduction = sum, replica_groups = [[0, 1]]} : f32[4]
    %h = tanh(%x) : f32[4]
    %k = multiply(%h, %w) : f32[4]
    %u = add(%r, %k) : f32[4]
    return %u, %k
  }
}
"""


def body_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if " = " in line]


def test_start_after_its_operand_done_before_its_first_use() -> None:
    module = parse_module(CHAIN)
    assert LatencyHiding().run(module) is True
    verify_module(module)
    lines = body_lines(print_module(module))
    ops = [line.split(" = ")[1].split("(")[0] for line in lines]
    assert ops == ["multiply", "all_reduce_start", "tanh", "multiply", "all_reduce_done", "add"]
    assert "all_reduce_start(%g) {reduction = sum, replica_groups = [[0, 1]]" in lines[1]
    assert lines[4].startswith("%r = all_reduce_done(") and lines[4].endswith("%g) : f32[4]")


def test_a_reduction_of_a_reduction_and_nothing_to_do() -> None:
    module = parse_module(CHAIN.replace("%u = add(%r, %k)", "%u = all_reduce(%r) {reduction = "
                                        "sum, replica_groups = [[0, 1]]}"))
    assert LatencyHiding().run(module) is True
    verify_module(module)
    ops = [line.split(" = ")[1].split("(")[0] for line in body_lines(print_module(module))]
    assert ops.count("all_reduce_start") == 2 and ops.count("all_reduce_done") == 2
    first_done = ops.index("all_reduce_done")
    assert ops.index("all_reduce_start", 2) > first_done  # the second waits for the first
    plain = parse_module(CHAIN.replace('%r = all_reduce(%g) {reduction = sum, replica_groups '
                                       '= [[0, 1]]}', "%r = negate(%g)"))
    assert LatencyHiding().run(plain) is False
