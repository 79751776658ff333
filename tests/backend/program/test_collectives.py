"""`collectives`: the manifest's collective placeholders of a partitioned program: what
each moves (kind, groups or pairs, one rank's operand, bytes), a start/done pair as one
asynchronous entry, the called functions' collectives after the entry's, and one entry per
placeholder naming every core's subgraph."""

from __future__ import annotations

from nxcc.backend.program.collectives import collectives_of, manifest_collectives
from nxcc.ir.parser import parse_module

PROGRAM = """\
module @m {
  func @main(%x: f32[4,4], %y: f32[2,4]) -> (f32[4,4], f32[4,4], f32[4]) {
    %a = all_reduce(%x) {reduction = max, replica_groups = [[0, 1]], channel_id = 3} : f32[4,4]
    %p = collective_permute(%x) {source_target_pairs = [[0, 1], [1, 0]]} : f32[4,4]
    %g = all_gather(%y) {dimension = 0, replica_groups = [[0, 1]]} : f32[4,4]
    %t = call(%g) {callee = @first_row} : f32[4]
    %s = all_reduce_start(%t) {reduction = sum, replica_groups = [[0], [1]]} : u32[]
    %d = all_reduce_done(%s, %t) : f32[4]
    return %a, %p, %d
  }
  func @first_row(%v: f32[4,4]) -> (f32[4]) {
    %s = slice(%v) {start_indices = [0, 0], limit_indices = [1, 4], strides = [1, 1]} : f32[1,4]
    %r = reshape(%s) {shape = [4]} : f32[4]
    %q = all_reduce(%r) {reduction = sum, replica_groups = [[0, 1]]} : f32[4]
    return %q
  }
}
"""


def test_each_collective_says_what_it_moves() -> None:
    found = collectives_of(parse_module(PROGRAM))
    assert found == [
        {"kind": "all_reduce", "reduction": "max", "replica_groups": [[0, 1]], "dtype": "f32",
         "shape": [4, 4], "bytes": 64, "channel_id": 3},
        {"kind": "collective_permute", "source_target_pairs": [[0, 1], [1, 0]],
         "dtype": "f32", "shape": [4, 4], "bytes": 64, "channel_id": 0},
        {"kind": "all_gather", "dimension": 0, "replica_groups": [[0, 1]], "dtype": "f32",
         "shape": [2, 4], "bytes": 32, "channel_id": 0},
        {"kind": "all_reduce", "async": True, "reduction": "sum", "replica_groups": [[0], [1]],
         "dtype": "f32", "shape": [4], "bytes": 16, "channel_id": 0},
        {"kind": "all_reduce", "reduction": "sum", "replica_groups": [[0, 1]], "dtype": "f32",
         "shape": [4], "bytes": 16, "channel_id": 0},
    ]


def test_one_entry_per_placeholder_names_each_cores_subgraph() -> None:
    cores = [parse_module(PROGRAM) for _ in range(2)]
    merged = manifest_collectives(cores)
    assert [e["id"] for e in merged] == [0, 1, 2, 3, 4]
    assert all(e["subgraphs"] == ["sg00", "sg01"] for e in merged)
    assert {k: v for k, v in merged[2].items() if k not in ("id", "subgraphs")} \
        == collectives_of(cores[0])[2]


def test_a_program_without_collectives_has_no_entry() -> None:
    module = parse_module("""\
module @m {
  func @main(%x: f32[4]) -> (f32[4]) {
    %y = exp(%x) : f32[4]
    return %y
  }
}
""")
    assert collectives_of(module) == [] and manifest_collectives([module, module]) == []
