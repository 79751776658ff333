"""Hugging Face model folders in and out of a run of the built-in decoder.

In: `exp_manager.resume_from_checkpoint` naming a folder with `config.json` and
`model.safetensors` (or its shards and `model.safetensors.index.json`) starts the run from
those weights, as NxD starts from a converted HF checkpoint with `resume_from_checkpoint`
and `model.weight_init_only: True`: the weights only, at step 0, under any TP x PP layout
(each rank takes its slices of the whole tensors). A checkpoint of the run itself in
`exp_dir` (`resume_if_exists`) goes first, so a restarted job continues where it stopped. The
same key naming an nxcc step folder (`checkpoint.json`) resumes from that step instead
(`prepare.start_folders` tells the two apart).

Out: `export_hf(config, folder)` joins the latest checkpoint of `exp_dir` (any layout it
was written with) into whole tensors and writes `config.json` and `model.safetensors`
(shards above `max_shard_bytes`) that transformers' `AutoModelForCausalLM.from_pretrained`
loads (`hf_weights` has the names).
"""

from __future__ import annotations

import json
import os

import numpy as np

from nxcc.backend.neff.atomic import atomic_file
from nxcc.driver.options import CompileOptions
from nxcc.driver.train import checkpoint_io as ckpt
from nxcc.driver.train.config import TrainConfig
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.hf_weights import HFMappingError, from_hf, hf_config, to_hf
from nxcc.driver.train.model_stage import decoder_config, decoder_unshard
from nxcc.driver.train.reshard import whole_params
from nxcc.driver.train.safetensors_io import INDEX, SINGLE, SafetensorsError, read_folder
from nxcc.driver.train.safetensors_io import write_folder as write_tensors
from nxcc.driver.train.stage_program import compile_function
from nxcc.nxd.models.decoder import DecoderConfig, StagePlan, build_logits
from nxcc.nxd.models.decoder.weights import model_specs, stage_specs

KEY = "exp_manager.resume_from_checkpoint"
DEFAULT_SHARD_BYTES = 5 * 10**9  # transformers' default max_shard_size, 5GB


def is_hf_folder(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, "config.json")) and any(
        os.path.isfile(os.path.join(folder, n)) for n in (SINGLE, INDEX))


def load_hf_weights(config: TrainConfig, folder: str) -> dict[str, np.ndarray]:
    """The decoder's whole weights from the HF folder `folder`, each checked against the
    model (TrainConfigError naming the key and the tensor)."""
    if config.model is None:
        raise TrainConfigError(KEY, "Hugging Face weights start the built-in decoder, not "
                                    "an ONNX model")
    if not is_hf_folder(folder):
        raise TrainConfigError(KEY, f"{folder} is not a Hugging Face model folder "
                               f"(config.json and {SINGLE} or {INDEX}); an nxcc "
                               "checkpoint is named by its step folder (checkpoint.json)")
    cfg = decoder_config(config.model)
    try:
        weights = from_hf(cfg, read_folder(folder))
    except (HFMappingError, SafetensorsError) as exc:
        raise TrainConfigError(KEY, f"{folder}: {exc}") from None
    except OSError as exc:
        raise TrainConfigError(KEY, f"{folder}: cannot be read ({exc.strerror})") from None
    for spec in model_specs(cfg):
        got = weights[spec.name].shape
        if got != spec.shape:
            raise TrainConfigError(KEY, f"{folder}: {spec.name} has shape {list(got)}, the "
                                        f"model's is {list(spec.shape)} (model sizes differ "
                                        "from the checkpoint's config.json?)")
        if not np.all(np.isfinite(weights[spec.name])):
            raise TrainConfigError(KEY, f"{folder}: {spec.name} holds a NaN or an infinity")
    return weights


def decoder_logits(cfg: DecoderConfig, weights: dict[str, np.ndarray], tokens: np.ndarray
                   ) -> np.ndarray:
    """The logits [batch, seq, vocab] the decoder computes for `tokens` (int [batch, seq])
    with the whole weights `weights`, compiled and run on one rank."""
    batch, seq = tokens.shape
    plan = StagePlan(first_layer=0, last_layer=cfg.num_layers, micro_batch=batch,
                     seq_length=seq)
    compiled = compile_function(build_logits(cfg, plan), "logits",
                                CompileOptions(target="trn1"))
    params = [np.ascontiguousarray(weights[s.name], np.float32)
              for s in stage_specs(cfg, plan)]
    out = compiled.executor(None).run([*params, np.ascontiguousarray(tokens, np.int32)])
    return np.asarray(out[0])


def export_hf(config: TrainConfig, folder: str,
              max_shard_bytes: int = DEFAULT_SHARD_BYTES) -> tuple[int, list[str]]:
    """Write the latest checkpoint of `config`'s exp_dir as a transformers model folder;
    (its step, the files written)."""
    if config.model is None:
        raise TrainConfigError("model.onnx_path", "an ONNX model is exported by its own "
                               "tools; --export-hf writes the built-in decoder")
    found = ckpt.find_latest(config.exp_manager.exp_dir)
    if found is None:
        raise TrainConfigError("exp_manager.exp_dir", f"{config.exp_manager.exp_dir} holds "
                               "no checkpoint to export (checkpoints/latest)")
    cfg = decoder_config(config.model)
    try:
        eos = config.vocabulary.eod_id if config.vocabulary is not None else None
        meta = hf_config(cfg, config.model.init_method_std, eos)
        weights = to_hf(cfg, whole_params(found, decoder_unshard(config.model)))
    except HFMappingError as exc:
        raise TrainConfigError("model", f"cannot export to Hugging Face: {exc}") from None
    files = write_tensors(folder, weights, max_shard_bytes)
    with atomic_file(os.path.join(folder, "config.json")) as out:
        out.write(json.dumps(meta, indent=2).encode("utf-8"))
    return found.step, [*files, "config.json"]
