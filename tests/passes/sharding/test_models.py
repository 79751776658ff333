"""Models compiled for trn2 at -lnc 2: same outputs as -lnc 1, and the placement the cost
model should find (shown by what `inspect-neff --json` reports)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest

from nxcc.backend.neff import read_neff
from nxcc.backend.runtime.model import LoadedModel
from nxcc.cli.inspect_cmd import describe
from nxcc.driver.compile import compile_model
from nxcc.driver.options import CompileOptions
from tests.cli_helpers import MODELS
from tests.passes.sharding import models

COMMITTED = sorted(p for p in MODELS.glob("*.onnx") if "dynbatch" not in p.name)


def compile_to(path: Path, out: Path, lnc: int, shapes: dict | None = None) -> Path:
    compile_model(str(path), CompileOptions(target="trn2", lnc=lnc, output=str(out),
                                            input_shapes=shapes or {}), emit=lambda s: None)
    return out


def inputs_for(neff: Path, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {e["name"]: rng.standard_normal(e["shape"]).astype(np.float32)
            for e in read_neff(neff).manifest["inputs"]}


def run(neff: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return LoadedModel(read_neff(neff, validate_hash=True)).execute(inputs)


def assert_lnc2_matches_lnc1(path: Path, tmp: Path, shapes: dict | None = None) -> dict:
    one = compile_to(path, tmp / "lnc1.neff", 1, shapes)
    two = compile_to(path, tmp / "lnc2.neff", 2, shapes)
    x = inputs_for(one)
    expected, got = run(one, x), run(two, x)
    assert got.keys() == expected.keys()
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-6)
    info = describe(str(two))
    assert info["header"]["lnc_size"] == 2
    assert [sg["name"] for sg in info["subgraphs"]] == ["sg00", "sg01"]
    return info


def kinds(info: dict) -> list[str]:
    return [c["kind"] for c in info["collectives"]]


def assert_balanced(info: dict) -> None:
    flops = [sg["flops"] for sg in info["subgraphs"]]
    assert min(flops) > 0 and max(flops) <= 1.05 * min(flops), flops


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.stem)
def test_committed_models_match_lnc1(path: Path, tmp_path: Path) -> None:
    info = assert_lnc2_matches_lnc1(path, tmp_path)
    assert_balanced(info)
    if path.stem.startswith("mlp"):
        assert kinds(info) == ["all_reduce"]


def test_dynamic_batch_model_with_an_odd_batch(tmp_path: Path) -> None:
    assert_lnc2_matches_lnc1(MODELS / "mlp_dynbatch_ts17.onnx", tmp_path, {"x": (7, 16)})


def test_cnn_splits_batch_or_output_channels(tmp_path: Path) -> None:
    two = compile_to(MODELS / "cnn_ts17.onnx", tmp_path / "cnn.neff", 2)
    ir = read_neff(two).files["sg00/program.ir"].decode()
    convs = [line for line in ir.splitlines()  # with or without their epilogue fused
             if "= convolution(" in line or "= fused_convolution(" in line]
    assert len(convs) == 2
    # Each core convolves half the batch (f32[1,...]) or half the output channels.
    assert all(": f32[1,8,16,16]" in c or ": f32[2,4,16,16]" in c for c in convs[:1]), convs
    assert all(": f32[1,16,8,8]" in c or ": f32[2,8,8,8]" in c for c in convs[1:]), convs


def save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def gpt_info(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("gpt")
    return assert_lnc2_matches_lnc1(save(models.gpt(layers=2), tmp / "gpt.onnx"), tmp)


def test_gpt_decoder_has_two_all_reduces_per_layer_and_nothing_else(gpt_info: dict) -> None:
    assert kinds(gpt_info) == ["all_reduce"] * 4
    assert all(c["reduction"] == "sum" and c["replica_groups"] == [[0, 1]] and
               c["shape"] == [1, 8, 64] for c in gpt_info["collectives"])
    assert gpt_info["communication"]["bytes_per_execution"] == 4 * 2 * 2048


def test_gpt_decoder_flops_are_balanced(gpt_info: dict) -> None:
    assert_balanced(gpt_info)


def test_gpt_decoder_attention_splits_heads_norms_and_residuals_replicated(tmp_path: Path
                                                                          ) -> None:
    two = compile_to(save(models.gpt(layers=1), tmp_path / "gpt1.onnx"), tmp_path / "g.neff", 2)
    lines = read_neff(two).files["sg01/program.ir"].decode().splitlines()
    # 4 heads of 16: each core computes scores and softmax for 2 heads.
    # (the head transposes are folded into the products: their batch dims vary)
    scores = [line for line in lines if "dot_general(" in line and
              re.search(r"lhs_batch_dims = \[\d, \d\]", line)]
    assert len(scores) == 2 and all(": f32[1,2,8," in line for line in scores), scores
    # Layer norms reduce whole rows, residual adds are whole: both replicated.
    # (each layer norm's two row reductions are one layer_norm op after fusion)
    norms = [line for line in lines if "layer_norm(" in line and "dimension = 2" in line]
    assert len(norms) == 2 and all("f32[1,8,64] sharding<replicated>" in x for x in norms), norms
    # (a residual add reads %x or an earlier residual; after partitioning it is fused with
    # the bias add before it)
    residuals = [line for line in lines if re.search(r"= add\((%x|%add_)|t1 = add\(a2, t0\)", line)]
    assert residuals and all("f32[1,8,64] sharding<replicated>" in x for x in residuals)


@pytest.mark.parametrize(("batch", "expected"), [(4, ["all_reduce"]), (4096, [])])
def test_mlp_placement_follows_the_cost_model(batch: int, expected: list[str],
                                               tmp_path: Path) -> None:
    """Small batch: weights dominate, Megatron (column then row, one all-reduce). Batch 4096:
    activations dominate, split by batch with no collective at all."""
    path = save(models.mlp(batch=batch, d_in=16, hidden=32, d_out=10), tmp_path / "mlp.onnx")
    info = assert_lnc2_matches_lnc1(path, tmp_path)
    assert kinds(info) == expected
    assert_balanced(info)
    ir = read_neff(tmp_path / "lnc2.neff").files["sg00/program.ir"].decode()
    dots = [line.split(" : ")[-1] for line in ir.splitlines() if "dot_general(" in line]
    if batch == 4:
        assert dots == ["f32[4,16] sharding<[1,2]>", "f32[4,10] sharding<[1,1,2] partial sum>"]
    else:
        assert dots == ["f32[2048,32] sharding<[2,1]>", "f32[2048,10] sharding<[2,1]>"]
