"""latency-hiding on every collective kind: each split into its start (as early as its operand
allows) and its done (just before its first reader), the other ops in their order; start/done
pairs already in the function (HLO's -start/-done) scheduled the same way."""

from __future__ import annotations

import pytest

from nxcc.ir.parser import parse_module
from nxcc.ir.printer import print_module
from nxcc.ir.verifier import verify_module
from nxcc.passes.latency_hiding import LatencyHiding

# kind -> (its attributes, its result type for an f32[4,4] operand over 2 ranks)
KINDS = {
    "all_reduce": ("{reduction = sum, replica_groups = [[0, 1]]}", "f32[4,4]"),
    "all_gather": ("{dimension = 0, replica_groups = [[0, 1]]}", "f32[8,4]"),
    "reduce_scatter": ("{dimension = 1, reduction = max, replica_groups = [[0, 1]]}",
                       "f32[4,2]"),
    "all_to_all": ("{split_dimension = 0, concat_dimension = 1, replica_groups = [[0, 1]]}",
                   "f32[2,8]"),
    "collective_permute": ("{source_target_pairs = [[0, 1], [1, 0]]}", "f32[4,4]"),
}

PROGRAM = """module @m {
  func @main(%x: f32[4, 4], %w: f32[4, 4]) -> ("a": RT, "b": f32[4, 4]) {
    %g = multiply(%x, %w) : f32[4, 4]
    %h = tanh(%x) : f32[4, 4]
    %r = KIND(%g) ATTRS : RT
    %k = multiply(%h, %w) : f32[4, 4]
    %e = exp(%k) : f32[4, 4]
    %u = negate(%r) : RT
    %v = abs(%u) : RT
    return %v, %e
  }
}
"""


def program(kind: str) -> str:
    attrs, rt = KINDS[kind]
    return PROGRAM.replace("KIND", kind).replace("ATTRS", attrs).replace("RT", rt)


def opcodes(text: str) -> list[str]:
    return [line.split(" = ")[1].split("(")[0] for line in text.splitlines() if " = " in line
            and "(" in line.split(" = ")[1]]


def lines_of(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("%")]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_is_split_start_early_done_late(kind: str) -> None:
    module = parse_module(program(kind))
    assert LatencyHiding().run(module) is True
    verify_module(module)
    text = print_module(module)
    # the start right after its operand, before the independent tanh; the done just before
    # negate, its first reader; the others keep their order
    assert opcodes(text) == ["multiply", f"{kind}_start", "tanh", "multiply", "exp",
                             f"{kind}_done", "negate", "abs"]
    body = lines_of(text)
    attrs, rt = KINDS[kind]
    start, done = body[1], body[5]
    assert start.startswith("%") and f"{kind}_start(%g) {attrs[:-1]}" in start
    assert start.endswith(": u32[]")
    done_attrs = "" if kind == "all_reduce" else f" {attrs}"  # all_reduce_done has none
    assert done.startswith(f"%r = {kind}_done(") and done.endswith(f"%g){done_attrs} : {rt}")
    context = start.split(" = ")[0]
    assert f"{kind}_done({context}, %g)" in done


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_split_program_is_scheduled_again_the_same_way(kind: str) -> None:
    """Start and done written next to each other (as HLO's pairs lower) move apart; running
    the pass on its own output changes nothing."""
    attrs, rt = KINDS[kind]
    done_attrs = "" if kind == "all_reduce" else f" {attrs}"
    text = program(kind).replace(
        f"    %r = {kind}(%g) {attrs} : {rt}\n", "").replace(
        "    %g = multiply(%x, %w) : f32[4, 4]\n    %h = tanh(%x) : f32[4, 4]\n",
        "    %h = tanh(%x) : f32[4, 4]\n    %g = multiply(%x, %w) : f32[4, 4]\n"
        "    %k = multiply(%h, %w) : f32[4, 4]\n"
        "    %e = exp(%k) : f32[4, 4]\n"
        f"    %c = {kind}_start(%g) {attrs} : u32[]\n"
        f"    %r = {kind}_done(%c, %g){done_attrs} : {rt}\n").replace(
        "    %k = multiply(%h, %w) : f32[4, 4]\n    %e = exp(%k) : f32[4, 4]\n"
        "    %u", "    %u")
    module = parse_module(text)
    verify_module(module)
    assert opcodes(print_module(module)) == [
        "tanh", "multiply", "multiply", "exp", f"{kind}_start", f"{kind}_done",
        "negate", "abs"]
    assert LatencyHiding().run(module) is True
    verify_module(module)
    # the start moves up to just after %g; the done stays just before negate
    assert opcodes(print_module(module)) == [
        "tanh", "multiply", f"{kind}_start", "multiply", "exp", f"{kind}_done",
        "negate", "abs"]
    assert LatencyHiding().run(module) is False


def test_kinds_keep_their_order_and_chain_through_dones() -> None:
    """A gather of a reduce-scatter's result: the gather starts as soon as it may, so the
    scatter's done comes just before the gather's start; starts keep the program's order of
    collectives (every rank meets them alike), so the all_to_all starts after the gather."""
    module = parse_module("""module @m {
  func @main(%x: f32[4, 4]) -> ("a": f32[4, 4], "b": f32[4, 4], "c": f32[4, 4]) {
    %s = reduce_scatter(%x) {dimension = 0, reduction = sum, replica_groups = [[0, 1]]} : f32[2, 4]
    %p = collective_permute(%x) {source_target_pairs = [[0, 1], [1, 0]]} : f32[4, 4]
    %t = tanh(%x) : f32[4, 4]
    %g = all_gather(%s) {dimension = 0, replica_groups = [[0, 1]]} : f32[4, 4]
    %a = all_to_all(%t) {split_dimension = 1, concat_dimension = 1, replica_groups = [[0, 1]]} : f32[4, 4]
    %y = add(%g, %p) : f32[4, 4]
    return %y, %a, %t
  }
}
""")
    assert LatencyHiding().run(module) is True
    verify_module(module)
    assert opcodes(print_module(module)) == [
        "reduce_scatter_start", "collective_permute_start", "reduce_scatter_done",
        "all_gather_start", "tanh", "all_to_all_start", "all_gather_done",
        "collective_permute_done", "add", "all_to_all_done"]


def test_a_done_needs_the_context_of_its_start() -> None:
    text = program("all_gather").replace(
        "%r = all_gather(%g) {dimension = 0, replica_groups = [[0, 1]]} : f32[8,4]",
        "%r = all_gather_done(%g, %g) {dimension = 0, replica_groups = [[0, 1]]} : f32[8,4]")
    with pytest.raises(Exception, match="all_gather_done: expected the u32\\[\\] context"):
        verify_module(parse_module(text))
