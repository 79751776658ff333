"""JAX's partitioned programs (Megatron MLP tp=4 x dp=2, a sharded row-sum, a
contraction-sharded matmul, attention with a fused QKV weight and heads split four ways) run as 8 ranks to JAX's global outputs, and the annotated
global programs are partitioned as annotated at -lnc 2."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.neff import read_neff
from nxcc.backend.runtime.nrt import Runtime
from tests.cli_helpers import neuronx_cc
from tests.passes.mesh_partition.programs import FIXTURES, PROGRAMS, data, meta, named_inputs


def assert_outputs_match(out: dict[str, np.ndarray], name: str) -> None:
    """Every output of program `name` is JAX's (fp32: rtol 1e-5, atol 1e-6)."""
    expected = {k: v for k, v in data(name).items() if k.startswith("output")}
    assert sorted(out) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(out[key], value, rtol=1e-5, atol=1e-6, err_msg=key)


@pytest.mark.parametrize("name", PROGRAMS)
def test_partitioned_program_runs_as_8_ranks(name: str, spmd_neffs: dict[str, Path],
                                             runtime: Runtime) -> None:
    model = runtime.load_spmd(spmd_neffs[name], 8, meta(name)["output_shardings"])
    out = runtime.execute(model, named_inputs(spmd_neffs[name], name))
    assert_outputs_match(out, name)


def test_world_size_on_the_command_line(spmd_neffs: dict[str, Path], tmp_path: Path) -> None:
    neff = spmd_neffs["megatron_mlp"]
    np.savez(tmp_path / "in.npz", **named_inputs(neff, "megatron_mlp"))
    spec = meta("megatron_mlp")["output_shardings"][0]
    r = neuronx_cc("run", str(neff), "--world-size", "8", "--inputs", str(tmp_path / "in.npz"),
                   "--output", str(tmp_path / "out.npz"), "--output-sharding", spec, "-q")
    assert r.returncode == 0, r.stderr
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_allclose(out["output0"], data("megatron_mlp")["output0"], rtol=1e-5)


def test_manifest_records_the_spmd_program(spmd_neffs: dict[str, Path]) -> None:
    neff = read_neff(spmd_neffs["megatron_mlp"])
    spmd = neff.manifest["spmd"]
    assert neff.header.lnc_size == 1 and len(neff.manifest["subgraphs"]) == 1
    assert neff.header.feature_bits == 0  # the real tool's word: no logical core of two
    assert neff.manifest["collectives"]
    assert (spmd["world_size"], spmd["num_partitions"], spmd["replica_count"]) == (8, 8, 1)
    x, w1 = spmd["inputs"][:2]
    assert x["layout"]["text"] == "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"
    assert (x["shape"], x["local_shape"]) == ([8, 16], [4, 16])
    assert (w1["shape"], w1["layout"]["tiles"], w1["layout"]["copies"]) == ([16, 32], [1, 4], 2)
    assert spmd["outputs"][0]["layout"] is None  # XLA's partitioned root carries none


@pytest.mark.parametrize("name", PROGRAMS)
def test_annotated_program_at_lnc2_matches_jax(name: str, lnc2_neffs: dict[str, Path]
                                               ) -> None:
    rt = Runtime().init(target="trn2")
    try:
        model = rt.load(lnc2_neffs[name])
        out = rt.execute(model, named_inputs(lnc2_neffs[name], name))
    finally:
        rt.close()
    assert_outputs_match(out, name)


def test_annotated_shardings_survive_partitioning(tmp_path: Path) -> None:
    """JAX's mesh annotations on the Megatron MLP's parameters (x by batch, w1 by columns,
    b1 and w2 by rows, b2 replicated) are the parameters' shardings after shard-partition,
    over the 2 cores; the partitioner keeps them and inserts collectives around them."""
    r = neuronx_cc("compile", str(FIXTURES / "megatron_mlp.lowered.hlo"), "--target", "trn2",
                   "-lnc", "2", "-o", str(tmp_path / "m.neff"), "--print-ir-after",
                   "shard-partition", "--logfile", str(tmp_path / "log.txt"))
    assert r.returncode == 0, r.stderr
    signature = next(line for line in r.stdout.splitlines() if "func @main" in line)
    for param in ("%x.1: f32[4,16] sharding<[2,1]>", "%w1.1: f32[16,16] sharding<[1,2]>",
                  "%b1.1: f32[16] sharding<[2]>", "%w2.1: f32[16,16] sharding<[2,1]>",
                  "%b2.1: f32[16] sharding<replicated>"):
        assert param in signature
    assert "all_reduce" in r.stdout or "reduce_scatter" in r.stdout


def test_multi_axis_annotation_is_replicated_with_a_warning(tmp_path: Path) -> None:
    r = neuronx_cc("compile", str(FIXTURES / "row_sum.lowered.hlo"), "--target", "trn2",
                   "-lnc", "2", "-o", str(tmp_path / "r.neff"), "--print-ir-after",
                   "shard-partition", "--logfile", str(tmp_path / "log.txt"))
    assert r.returncode == 0, r.stderr
    assert "WARNING: sharding of x.1 is taken as replicated" in r.stderr
    assert "multi-axis mesh" in r.stderr
    assert "%x.1: f32[8,32] sharding<replicated>" in r.stdout


@pytest.mark.parametrize("name", PROGRAMS)
def test_partitioned_program_is_bit_identical_over_20_runs(
        name: str, spmd_neffs: dict[str, Path], runtime: Runtime) -> None:
    """Ranks are threads reusing their planned buffers as soon as a collective returns; a
    ring collective must never hand a neighbour a view of them (the fused-QKV attention's
    all-gather did, and its output changed from run to run)."""
    model = runtime.load_spmd(spmd_neffs[name], 8, meta(name)["output_shardings"])
    inputs = named_inputs(spmd_neffs[name], name)
    first = runtime.execute(model, inputs)
    assert_outputs_match(first, name)
    for _ in range(19):
        again = runtime.execute(model, inputs)
        for key, value in first.items():
            np.testing.assert_array_equal(again[key], value)
