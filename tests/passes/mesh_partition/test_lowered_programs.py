"""JAX's lowered (global, annotated) programs on meshes of 8 devices, partitioned by nxcc
(mesh-partition) for 8 ranks: HLO text and StableHLO both run at --world-size 8 to JAX's
outputs, bit-identically run after run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.neff import read_neff
from nxcc.backend.runtime.nrt import Runtime
from nxcc.compiler.hlo import import_hlo
from nxcc.ir.printer import print_module
from nxcc.passes.mesh_partition.partition import MeshPartition
from tests.cli_helpers import neuronx_cc
from tests.e2e.test_jax_programs import assert_outputs_match
from tests.passes.mesh_partition.programs import FIXTURES, PROGRAMS, data, named_inputs

FORMS = [n for n in PROGRAMS] + [f"{n}.mlir" for n in PROGRAMS]


@pytest.mark.parametrize("key", FORMS)
def test_lowered_program_runs_as_8_ranks(key: str, lowered_neffs: dict[str, Path],
                                         runtime: Runtime) -> None:
    name = key.removesuffix(".mlir")
    neff = lowered_neffs[key]
    assert read_neff(neff).manifest["spmd"]["world_size"] == 8
    model = runtime.load_spmd(neff, 8)
    assert_outputs_match(runtime.execute(model, named_inputs(neff, name)), name)


@pytest.mark.parametrize("name", ["megatron_mlp", "attention_qkv", "dp_train_step",
                                  "fsdp_train_step"])
def test_lowered_program_is_bit_identical_over_20_runs(name: str,
                                                       lowered_neffs: dict[str, Path],
                                                       runtime: Runtime) -> None:
    neff = lowered_neffs[name]
    model = runtime.load_spmd(neff, 8)
    inputs = named_inputs(neff, name)
    first = runtime.execute(model, inputs)
    assert_outputs_match(first, name)
    for _ in range(19):
        again = runtime.execute(model, inputs)
        for key, value in first.items():
            np.testing.assert_array_equal(again[key], value)


@pytest.mark.parametrize("name", ["megatron_mlp", "fsdp_train_step"])
def test_command_line_compile_then_run_world_size_8(name: str, tmp_path: Path) -> None:
    neff = tmp_path / "m.neff"
    r = neuronx_cc("compile", str(FIXTURES / f"{name}.lowered.hlo"), "--target", "trn1",
                   "-o", str(neff), "--logfile", str(tmp_path / "log.txt"))
    assert r.returncode == 0, r.stderr
    assert "WARNING" not in r.stderr
    np.savez(tmp_path / "in.npz", **named_inputs(neff, name))
    r = neuronx_cc("run", str(neff), "--world-size", "8", "--inputs", str(tmp_path / "in.npz"),
                   "--output", str(tmp_path / "out.npz"), "-q")
    assert r.returncode == 0, r.stderr
    with np.load(tmp_path / "out.npz") as out:
        assert_outputs_match({k: out[k] for k in out.files}, name)


def partitioned(name: str) -> str:
    m = import_hlo(str(FIXTURES / f"{name}.lowered.hlo"))
    assert MeshPartition().run(m)
    return print_module(m)


def test_megatron_mlp_needs_one_all_reduce_over_tensor_parallel_groups() -> None:
    """Column-parallel then row-parallel: the first matmul is local, the second gives a
    partial sum that one all-reduce over each data-parallel row of the mesh completes."""
    text = partitioned("megatron_mlp")
    assert "%x.1: f32[4,16], %w1.1: f32[16,8], %b1.1: f32[8], %w2.1: f32[8,16]" in text
    assert text.count("all_reduce(") == 1 and "all_gather(" not in text
    assert "replica_groups = [[0, 1, 2, 3], [4, 5, 6, 7]]" in text


def test_contraction_split_gives_one_all_reduce_and_row_sum_one() -> None:
    for name, groups in (("contraction_matmul", "[[0, 1, 2, 3, 4, 5, 6, 7]]"),
                         ("row_sum", "[[0, 1, 2, 3], [4, 5, 6, 7]]")):
        text = partitioned(name)
        assert text.count("all_reduce(") == 1 and "all_gather(" not in text, name
        assert f"replica_groups = {groups}" in text, name


def test_fsdp_step_gathers_weights_and_keeps_their_shards() -> None:
    """FSDP: each weight is all-gathered for use; the updated weights leave as shards."""
    m = import_hlo(str(FIXTURES / "fsdp_train_step.lowered.hlo"))
    MeshPartition().run(m)
    text = print_module(m)
    assert "all_gather(%w1.1)" in text and "all_gather(%w2.1)" in text
    assert text.count("all_gather(") == 2  # the gathered w2 serves the backward pass too
    assert text.count("reduce_scatter(") == 2  # each gradient reduced straight to shards
    assert text.count("all_reduce(") == 1  # the loss
    assert m.spmd is not None and m.spmd.world_size == 8
    assert [r.local_shape for r in m.spmd.results] == [(2, 32), (4, 8), ()]
    assert [r.layout.tiles for r in m.spmd.results[:2]] == [(8, 1), (8, 1)]


def test_lnc2_keeps_its_own_partitioning(lnc2_neffs: dict[str, Path]) -> None:
    """At -lnc 2 the annotations still guide the two-core sharding (no SPMD program)."""
    m = read_neff(lnc2_neffs["megatron_mlp"]).manifest
    assert "spmd" not in m and len(m["subgraphs"]) == 2
    assert data("megatron_mlp")["input0"].shape == (8, 16)


def test_attention_splits_heads_after_gathering_the_fused_projection() -> None:
    """The QKV columns split four ways do not split the (3, heads, dim) reshape evenly: the
    projection is gathered once over tp, each rank slices its head out locally, and the
    row-split output projection's partial sums are all-reduced once, as XLA does."""
    text = partitioned("attention_qkv")
    assert text.count("all_gather(") == 1 and text.count("all_reduce(") == 1
    scores = next(line for line in text.splitlines() if "%dot_general.6 = " in line)
    assert scores.endswith(": f32[2,1,8,8]")  # 2 of 4 batches, 1 of 4 heads per rank


def test_sharding_constraint_places_the_hidden_activation() -> None:
    """with_sharding_constraint (HLO's Sharding custom-call) puts the tanh activation by
    columns over tp: its rows are gathered over dp, each rank takes its columns, and the
    second matmul's partial sums are all-reduced over tp."""
    text = partitioned("constrained_mlp")
    assert "all_gather(%tanh.1) {dimension = 0, replica_groups = [[0, 4], [1, 5], [2, 6], " \
        "[3, 7]]" in text
    second = next(line for line in text.splitlines() if "%dot_general.4 = " in line)
    assert second.endswith(": f32[8,16]")  # whole rows, a quarter of the contraction
    assert "all_reduce(%dot_general.4) {reduction = sum, replica_groups = [[0, 1, 2, 3], " \
        "[4, 5, 6, 7]]" in text


def test_uneven_sharding_is_one_clear_error(tmp_path: Path) -> None:
    src = tmp_path / "u.hlo"
    src.write_text("HloModule u\n\nENTRY main {\n"
                   "  x = f32[6,4]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}\n"
                   "  ROOT y = f32[6,4]{1,0} negate(x)\n}\n")
    r = neuronx_cc("compile", str(src), "--target", "trn1", "-o", str(tmp_path / "u.neff"),
                   "--logfile", str(tmp_path / "log.txt"))
    assert r.returncode != 0 and not (tmp_path / "u.neff").exists()
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ERROR: [NCC_EVRF064]")
    assert "parameter x of shape [6, 4]" in lines[0] and "equal blocks" in lines[0]
