"""Write the Hugging Face fixtures of the HF round-trip tests (needs torch==2.13.0 and
transformers; the tests need neither): run once, outputs committed.

    python tests/driver/train/make_hf_reference.py

1. `data/hf_llama_tiny/` and `data/hf_gpt2_tiny/`: a tiny LlamaForCausalLM (grouped-query
   attention) and GPT2LMHeadModel (tied embeddings), seeded, saved by transformers'
   `save_pretrained` (config.json + model.safetensors): the checkpoints runs start from.
2. `data/hf_logits.npz`: transformers' logits for `hf_pipeline.PROBE` of each input model
   (`<family>_input`), and of the model `neuronx-cc train ... --export-hf` writes after
   training from it (`<family>_export`, loaded with `from_pretrained` from nxcc's files).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import transformers

sys.path.insert(0, str(next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())))

from tests.driver.train.hf_pipeline import (  # noqa: E402
    HF_INPUT,
    PROBE,
    REFERENCE,
    SEQ,
    VOCAB,
    train_and_export,  # noqa: E402
)


def _models() -> dict[str, torch.nn.Module]:
    torch.manual_seed(0)
    llama = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=SEQ,
        rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False))
    gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=VOCAB, n_embd=32, n_head=4, n_layer=2, n_positions=SEQ, n_inner=64,
        layer_norm_epsilon=1e-5, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1))
    return {"llama": llama, "gpt2": gpt2}


def _logits(model: torch.nn.Module) -> np.ndarray:
    model.eval()
    with torch.no_grad():
        return model(torch.tensor(PROBE)).logits.numpy().astype(np.float32)


def main() -> None:
    out: dict[str, np.ndarray] = {"probe": PROBE}
    for family, model in _models().items():
        model.save_pretrained(HF_INPUT[family], safe_serialization=True)
        out[f"{family}_input"] = _logits(model)
        with tempfile.TemporaryDirectory() as tmp:
            exported, _ = train_and_export(family, Path(tmp))
            loaded = transformers.AutoModelForCausalLM.from_pretrained(
                exported, dtype=torch.float32)
            out[f"{family}_export"] = _logits(loaded)
        print(f"{family}: input and exported logits {out[f'{family}_export'].shape}")
    np.savez(REFERENCE, **out)


if __name__ == "__main__":
    main()
