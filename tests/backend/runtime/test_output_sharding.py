"""Global inputs and outputs of SPMD runs: HLO sharding text as layouts, splitting and
assembling, `--output-sharding`, and outputs taken as replicated that the ranks disagree on."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.neff import read_neff
from nxcc.backend.runtime.nrt import Runtime
from nxcc.backend.runtime.spmd_layout import (
    LayoutError,
    OutputsDisagree,
    assemble,
    parse_layout,
    split,
)
from nxcc.backend.runtime.spmd_spec import output_layouts, read_spec
from tests.cli_helpers import assert_one_line_error, neuronx_cc
from tests.passes.mesh_partition.programs import compile_hlo, named_inputs

PID_HLO = """HloModule spmd_pid, num_partitions=2
ENTRY main {
  x = f32[2,3] parameter(0), sharding={devices=[2,1]0,1}
  pid = u32[] partition-id()
  c = f32[] convert(pid)
  b = f32[2,3] broadcast(c), dimensions={}
  ROOT y = f32[2,3] add(x, b), sharding={devices=[2,1]1,0}
}
"""


def test_hlo_sharding_text_as_layouts() -> None:
    x = parse_layout("{devices=[2,1,4]<=[8] last_tile_dim_replicate}", 2)
    assert (x.tiles, x.copies, x.coords(5)) == ((2, 1), 4, (1, 0))
    w = parse_layout("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}", 2)
    assert [w.coords(r) for r in range(8)] == [(0, 0), (0, 1), (0, 2), (0, 3)] * 2
    assert parse_layout("{devices=[2,2,2]<=[8] last_tile_dims={replicated}}", 2).copies == 2
    assert parse_layout("{replicated}", 3).is_replicated
    assert parse_layout("{maximal device=3}", 1).owner == 3
    with pytest.raises(LayoutError, match="does not give each rank a block"):
        parse_layout("{manual}", 2)
    with pytest.raises(LayoutError, match="not an HLO sharding"):
        parse_layout("{devices=[2,1", 2)
    with pytest.raises(LayoutError, match="tiles 2 dimensions, the value has 1"):
        parse_layout("{devices=[2,1]0,1}", 1)


def test_split_then_assemble_is_the_identity() -> None:
    x = np.arange(8 * 12, dtype=np.float32).reshape(8, 12)
    for text in ("{devices=[2,4]<=[8]}", "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
                 "{devices=[8,1]7,6,5,4,3,2,1,0}", "{replicated}"):
        layout = parse_layout(text, 2)
        blocks = split(x, layout, 8)
        assert all(b.flags.c_contiguous for b in blocks)
        np.testing.assert_array_equal(assemble("y", layout, blocks), x)
    blocks = split(x, parse_layout("{devices=[2,4]<=[8]}", 2), 8)
    np.testing.assert_array_equal(blocks[5], x[4:8, 3:6])


def test_replicated_outputs_must_agree() -> None:
    same = [np.ones(3, np.float32)] * 4
    assert assemble("y", None, same) is same[0]
    nan = [np.array([np.nan, 1.0])] * 2
    assemble("y", None, [nan[0], nan[1].copy()])  # NaN equals NaN here
    with pytest.raises(OutputsDisagree, match="rank 2 differs from rank 0 in 1 of 3 elements"):
        assemble("y", None, [same[0], same[0], np.array([1, 2, 1], np.float32), same[0]])


def test_output_sharding_count_and_conflicts(tmp_path: Path) -> None:
    (tmp_path / "pid.hlo").write_text(PID_HLO)
    spec = read_spec(read_neff(compile_hlo(tmp_path / "pid.hlo", tmp_path / "pid.neff"))
                     .manifest)
    assert output_layouts(spec, None)[0].devices == (1, 0)  # the program's root sharding
    assert output_layouts(spec, ["{devices=[2,1]1,0}"])[0].devices == (1, 0)
    with pytest.raises(LayoutError, match="given 2 time"):
        output_layouts(spec, ["{replicated}", "{replicated}"])
    with pytest.raises(LayoutError, match="carries sharding .* but --output-sharding says"):
        output_layouts(spec, ["{replicated}"])


def test_root_sharding_and_partition_id(tmp_path: Path) -> None:
    """The root's sharding assembles the output (device 1 holds the first block) and every
    rank sees its own partition_id."""
    (tmp_path / "pid.hlo").write_text(PID_HLO)
    neff = compile_hlo(tmp_path / "pid.hlo", tmp_path / "pid.neff")
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    rt = Runtime().init(target="trn1")
    try:
        out = rt.execute(rt.load_spmd(neff, 2), {"x": x})["output0"]
    finally:
        rt.close()
    # rank 0 holds x[0:2] (+0), rank 1 x[2:4] (+1); the root puts rank 1's block first
    np.testing.assert_array_equal(out, np.concatenate([x[2:4] + 1, x[0:2]]))


def test_disagreeing_replicated_output_is_a_one_line_error(spmd_neffs: dict[str, Path],
                                                           tmp_path: Path) -> None:
    neff = spmd_neffs["megatron_mlp"]
    np.savez(tmp_path / "in.npz", **named_inputs(neff, "megatron_mlp"))
    r = neuronx_cc("run", str(neff), "--world-size", "8", "--inputs", str(tmp_path / "in.npz"))
    assert_one_line_error(r, "output 'output0' is taken as replicated", "ranks disagree",
                          "--output-sharding")


def test_world_size_errors(spmd_neffs: dict[str, Path]) -> None:
    neff = str(spmd_neffs["megatron_mlp"])
    assert_one_line_error(neuronx_cc("run", neff), "is an SPMD program partitioned for 8 ranks",
                          "--world-size 8")
    assert_one_line_error(neuronx_cc("run", neff, "--world-size", "4"),
                          "a collective group of 4 ranks is not possible",
                          "supports groups of 2, 8 or 32 ranks")
    assert_one_line_error(neuronx_cc("run", neff, "--world-size", "2"),
                          "was partitioned for 8 ranks")
    r = neuronx_cc("run", neff, "--output-sharding", "{replicated}")
    assert r.returncode == 2
    assert_one_line_error(r, "--output-sharding needs --world-size")
