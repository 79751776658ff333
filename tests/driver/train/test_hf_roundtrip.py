"""Hugging Face checkpoints in and out: transformers' own files (written by
make_hf_reference.py with save_pretrained) start a run and give transformers' logits
through nxcc's decoder; NxD's hf_llama3_8B and megatron_gpt configs, shrunk, train from them
on a save_to_disk folder / blended Megatron datasets, and the export loads in transformers
with the logits nxcc computes (figures stored by the generator; no torch needed here)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from nxcc.driver.train.hf_checkpoint import decoder_logits
from nxcc.driver.train.hf_weights import from_hf, to_hf
from nxcc.driver.train.safetensors_io import read_folder, read_safetensors, write_folder
from nxcc.nxd.models.decoder import DecoderConfig, init_full_weights
from tests.cli_helpers import assert_one_line_error, neuronx_cc
from tests.driver.train.hf_pipeline import HF_INPUT, PROBE, REFERENCE, SEQ, VOCAB, train_and_export

SHAPES = {"llama": DecoderConfig("llama", num_layers=2, hidden_size=32, num_attention_heads=4,
                                 num_kv_heads=2, ffn_hidden_size=64, vocab_size=VOCAB,
                                 max_position_embeddings=SEQ, rope_theta=500000.0),
          "gpt2": DecoderConfig("gpt", num_layers=2, hidden_size=32, num_attention_heads=4,
                                ffn_hidden_size=64, vocab_size=VOCAB,
                                max_position_embeddings=SEQ, tie_embeddings=True)}


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_transformers_files_give_transformers_logits(family: str) -> None:
    cfg = SHAPES[family]
    weights = from_hf(cfg, read_folder(str(HF_INPUT[family])))
    with np.load(REFERENCE) as ref:
        np.testing.assert_allclose(decoder_logits(cfg, weights, PROBE), ref[f"{family}_input"],
                                   rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_weights_round_trip_through_sharded_files(family: str, tmp_path: Path) -> None:
    cfg = SHAPES[family]
    weights = init_full_weights(cfg, 7)
    files = write_folder(str(tmp_path), to_hf(cfg, weights), max_shard_bytes=20_000)
    assert "model.safetensors.index.json" in files and len(files) > 2
    back = from_hf(cfg, read_folder(str(tmp_path)))
    assert set(back) == set(weights)
    for name, value in weights.items():
        np.testing.assert_array_equal(back[name], value, err_msg=name)
    safetensors = pytest.importorskip("safetensors.numpy", reason="the safetensors package "
                                      "(test extra) reads nxcc's files as its own")
    shard = tmp_path / files[0]
    theirs = safetensors.load_file(str(shard))
    ours = read_safetensors(str(shard))
    assert set(theirs) == set(ours)
    for name in ours:
        np.testing.assert_array_equal(theirs[name], ours[name])


@pytest.mark.usefixtures("any_even_ranks")  # TP2 x PP2: 4 ranks
@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_shrunk_nxd_config_trains_from_hf_and_exports_transformers_logits(
        family: str, tmp_path: Path) -> None:
    exported, run = train_and_export(family, tmp_path)
    assert "trained steps 1..3 on 4 ranks" in run.stdout
    meta = json.loads((exported / "config.json").read_text())
    assert meta["architectures"] == [{"llama": "LlamaForCausalLM",
                                      "gpt2": "GPT2LMHeadModel"}[family]]
    cfg = SHAPES[family]
    weights = from_hf(cfg, read_folder(str(exported)))
    start = from_hf(cfg, read_folder(str(HF_INPUT[family])))
    assert not np.array_equal(weights["embed.tokens"], start["embed.tokens"])  # it trained
    with np.load(REFERENCE) as ref:
        np.testing.assert_allclose(decoder_logits(cfg, weights, PROBE),
                                   ref[f"{family}_export"], rtol=1e-4, atol=1e-5)


@pytest.mark.usefixtures("any_even_ranks")  # TP2 x PP2: 4 ranks
def test_a_checkpoint_that_does_not_fit_is_refused_before_anything(tmp_path: Path) -> None:
    bad = tmp_path / "hf"
    bad.mkdir()
    (bad / "config.json").write_text((HF_INPUT["llama"] / "config.json").read_text())
    tensors = dict(read_folder(str(HF_INPUT["llama"])))
    tensors["model.norm.weight"] = np.ones(31, np.float32)
    write_folder(str(bad), tensors, 10**9)
    exp = tmp_path / "exp"
    from tests.driver.train.hf_pipeline import _llama

    config, overrides = _llama(tmp_path)
    overrides = [o for o in overrides if not o.startswith("exp_manager.resume_from")]
    for extra in ((), ("--dry-run",)):
        r = neuronx_cc("train", str(config), "--quiet", f"exp_manager.exp_dir={exp}",
                       *overrides, f"++exp_manager.resume_from_checkpoint={bad}", *extra)
        assert_one_line_error(r, "[NCC_ETRN001] exp_manager.resume_from_checkpoint:",
                              "final_norm.weight has shape [31]")
        assert r.returncode == 2 and not exp.exists()
    r = neuronx_cc("train", str(config), "--quiet", f"exp_manager.exp_dir={exp}", *overrides,
                   "--export-hf", str(tmp_path / "out"))
    assert_one_line_error(r, "[NCC_ETRN001] exp_manager.exp_dir:", "no checkpoint to export")
