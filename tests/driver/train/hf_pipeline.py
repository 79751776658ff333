"""A user's Hugging Face round trip, shared by the tests and by `make_hf_reference.py`:
NxD's published config (`nxd_configs`) shrunk on the command line only, trained with
`neuronx-cc train` from a Hugging Face checkpoint (`data/hf_*_tiny/`, written by
transformers' `save_pretrained`), then exported with `--export-hf`.

* llama: `hf_llama3_8B_config.yaml` on a `save_to_disk` dataset and a tokenizer folder,
  TP2 x PP2;
* gpt2: `megatron_gpt_config.yaml` on two Megatron datasets blended 0.3 / 0.7 with a GPT-2
  vocabulary, TP2 x PP2 (its tied embeddings on both ends of the pipeline).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

from tests.cli_helpers import neuronx_cc
from tests.driver.train.nxd_configs import write_config
from tests.driver.train.nxd_fixtures import (
    gpt2_vocabulary,
    hf_tokenizer,
    megatron_pair,
    save_to_disk,
)

DATA = Path(__file__).resolve().parent / "data"
HF_INPUT = {"llama": DATA / "hf_llama_tiny", "gpt2": DATA / "hf_gpt2_tiny"}
REFERENCE = DATA / "hf_logits.npz"
VOCAB, TOKENIZER_IDS, SEQ = 256, 250, 16
#: The tokens whose logits are compared.
PROBE = (np.arange(2 * SEQ, dtype=np.int64).reshape(2, SEQ) * 7 + 3) % TOKENIZER_IDS

SHRINK = ("trainer.devices=4", "trainer.num_nodes=1",
          "distributed_strategy.tensor_model_parallel_size=2",
          "distributed_strategy.pipeline_model_parallel_size=2",
          "data.global_batch_size=4", "trainer.max_steps=3", "trainer.log_every_n_steps=1",
          f"model.encoder_seq_length={SEQ}", "model.num_layers=2", "model.hidden_size=32",
          "precision.type=fp32", "compiler_cache_url=null",
          "exp_manager.checkpoint_callback_params.every_n_train_steps=3",
          "model.optim.sched.warmup_steps=1", "+model.weight_init_only=true")


def _llama(tmp: Path) -> tuple[Path, list[str]]:
    config = write_config("hf_llama3_8B_config.yaml", tmp)
    rows = np.random.default_rng(5).integers(0, TOKENIZER_IDS, (24, SEQ))
    data = save_to_disk(tmp / "wikicorpus_tokenized", rows, rows_per_file=10)
    tok = hf_tokenizer(tmp / "llama_tokenizer", TOKENIZER_IDS)
    hf = HF_INPUT["llama"]
    return config, [*SHRINK, f"model.max_position_embeddings={SEQ}",
                    "distributed_strategy.kv_replicator=1",
                    f"model.model_config={hf / 'config.json'}", f"data.train_dir={data}",
                    f"+data.tokenizer.type={tok}", f"++exp_manager.resume_from_checkpoint={hf}"]


def _gpt2(tmp: Path) -> tuple[Path, list[str]]:
    config = write_config("megatron_gpt_config.yaml", tmp)
    vocab, merges = gpt2_vocabulary(tmp / "gpt2", TOKENIZER_IDS)
    a, b = megatron_pair(tmp / "datasets", TOKENIZER_IDS - 1, TOKENIZER_IDS - 1)
    return config, [*SHRINK, "model.ffn_hidden_size=64", "model.num_attention_heads=4",
                    "model.num_kv_heads=4", f"data.data_prefix=[0.3,{a},0.7,{b}]",
                    f"data.tokenizer.vocab_file={vocab}", f"data.tokenizer.merge_file={merges}",
                    f"++exp_manager.resume_from_checkpoint={HF_INPUT['gpt2']}"]


def train_and_export(family: str, tmp: Path) -> tuple[Path, subprocess.CompletedProcess]:
    """Train `family`'s config from its HF checkpoint, export the result; (the exported
    folder, the training run)."""
    config, overrides = (_llama if family == "llama" else _gpt2)(tmp)
    exp = tmp / "exp"
    run = neuronx_cc("train", str(config), "--quiet", f"exp_manager.exp_dir={exp}",
                     *overrides)
    if run.returncode:
        raise AssertionError(run.stderr)
    out = tmp / "exported"
    export = neuronx_cc("train", str(config), "--quiet", f"exp_manager.exp_dir={exp}",
                        *overrides, "--export-hf", str(out))
    if export.returncode:
        raise AssertionError(export.stderr)
    return out, run
