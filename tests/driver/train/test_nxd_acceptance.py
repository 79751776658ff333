"""NxD Training's own megatron_gpt_config.yaml and megatron_llama_7B_config.yaml, shrunk on
the command line only, train from two Megatron indexed datasets blended 0.3 / 0.7 (with the
tokenizer files NxD names, padded as Megatron pads): one rank and TP2 x PP2 x DP2 under
`mpiexec -n 8` give the same losses (the GPT's tied embeddings on both ends of the
pipeline). `--dry-run` and the real run refuse the same files with the same line and
status, creating nothing under exp_dir."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from nxcc.driver.train.metrics import read_metrics
from tests.cli_helpers import neuronx_cc
from tests.driver.train.nxd_configs import write_config
from tests.driver.train.nxd_fixtures import gpt2_vocabulary, hf_tokenizer, megatron_pair
from tests.mpi.test_mpi_runs import mpiexec, needs_mpi

IDS = 250  # the tokenizer's; padded to 256 by 8 x TP for TP 1 and 2 alike
SHRINK = ("data.global_batch_size=8", "trainer.max_steps=3", "model.encoder_seq_length=16",
          "model.num_layers=2", "model.hidden_size=32", "model.ffn_hidden_size=64",
          "model.num_attention_heads=4", "model.num_kv_heads=4", "precision.type=fp32",
          "compiler_cache_url=null", "trainer.val_check_interval=2",
          "exp_manager.create_checkpoint_callback=false")
ONE = ("trainer.devices=1", "distributed_strategy.tensor_model_parallel_size=1")
EIGHT = ("trainer.devices=8", "distributed_strategy.tensor_model_parallel_size=2",
         "distributed_strategy.pipeline_model_parallel_size=2")


def _config(name: str, tmp: Path) -> tuple[Path, list[str]]:
    config = write_config(name, tmp)
    a, b = megatron_pair(tmp / "datasets", IDS - 1, IDS - 1)
    if name.startswith("megatron_gpt"):
        vocab, merges = gpt2_vocabulary(tmp / "gpt2", IDS)
        tokenizer = [f"data.tokenizer.vocab_file={vocab}", f"data.tokenizer.merge_file={merges}"]
    else:
        tokenizer = [f"data.tokenizer.type={hf_tokenizer(tmp / 'llama_tokenizer', IDS)}"]
    return config, [*SHRINK, f"data.data_prefix=[0.3,{a},0.7,{b}]", *tokenizer]


def _records(exp: Path) -> list[dict]:
    return read_metrics(str(exp / "metrics.jsonl"))


@needs_mpi
@pytest.mark.parametrize("name", ["megatron_gpt_config.yaml", "megatron_llama_7B_config.yaml"])
def test_one_rank_and_eight_processes_agree(name: str, tmp_path: Path) -> None:
    config, overrides = _config(name, tmp_path)
    one = tmp_path / "one"
    r = neuronx_cc("train", str(config), "--quiet", *overrides, *ONE,
                   f"exp_manager.exp_dir={one}")
    assert r.returncode == 0, r.stderr
    many = tmp_path / "many"
    r = mpiexec(8, "train", str(config), "--quiet", *overrides, *EIGHT,
                f"exp_manager.exp_dir={many}", env={})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1].startswith("trained steps 1..3 on 8 ranks")
    a, b = _records(one), _records(many)
    assert [x["step"] for x in a] == [x["step"] for x in b] == [1, 2, 3]
    np.testing.assert_allclose([x["loss"] for x in b], [x["loss"] for x in a], rtol=1e-5)
    np.testing.assert_allclose(b[1]["val_loss"], a[1]["val_loss"], rtol=1e-5)
    assert a[0]["loss"] == pytest.approx(np.log(256), rel=0.05)  # the padded vocabulary


def _not_onnx(tmp: Path) -> list[str]:
    bad = tmp / "model.onnx"
    bad.write_text("not a model")
    return [f"+model.onnx_path={bad}", "+model.onnx_loss_input=logits",
            "+model.onnx_label_input=labels", "distributed_strategy.sequence_parallel=false",
            "distributed_strategy.tensor_model_parallel_size=1"]


def _small_vocab_onnx(tmp: Path) -> list[str]:
    """An ONNX language model of 16 classes, on data whose ids reach 249."""
    emb = helper.make_tensor("emb", TensorProto.FLOAT, [16, 16], np.zeros(256).tolist())
    graph = helper.make_graph([helper.make_node("Gather", ["emb", "tokens"], ["logits"])],
                              "lm", [helper.make_tensor_value_info("tokens", TensorProto.INT64,
                                                                   [1, 16])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                                             [1, 16, 16])], [emb])
    path = tmp / "lm.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return ["data.tokenizer.vocab_file=null", f"+model.onnx_path={path}", "+model.onnx_loss_input=logits",
            "+model.onnx_label_input=labels", "distributed_strategy.sequence_parallel=false",
            "distributed_strategy.tensor_model_parallel_size=1"]


@pytest.mark.parametrize(("changes", "fragment"), [
    (lambda t: ["+distributed_strategy.kv_replicator=4", "model.num_kv_heads=1"],
     "kv_replicator 4 must equal the tensor parallel size 2"),
    (_small_vocab_onnx, "outside the vocabulary [0, 16)"),
    (_not_onnx, "model.onnx_path:"),
    (lambda t: ["++model.vocab_size=1000000000000000000000000000000"], "do not fit this host"),
])
def test_dry_run_and_run_refuse_alike(changes, fragment: str, tmp_path: Path) -> None:  # noqa: ANN001
    config, overrides = _config("megatron_gpt_config.yaml", tmp_path)
    exp = tmp_path / "exp"
    lines = []
    for extra in (("--dry-run",), ()):
        r = neuronx_cc("train", str(config), "--quiet", *overrides, "trainer.devices=2",
                       "distributed_strategy.tensor_model_parallel_size=2",
                       f"exp_manager.exp_dir={exp}", *changes(tmp_path), *extra)
        errors = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(errors) == 1, r.stderr
        assert errors[0].startswith("ERROR: [NCC_ETRN001]") and fragment in errors[0], errors
        assert not exp.exists()
        lines.append(errors[0])
    assert lines[0] == lines[1]
