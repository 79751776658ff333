"""What a training run will do, as `neuronx-cc train --dry-run` shows it (text or JSON)."""

from __future__ import annotations

from nxcc.compiler.decoder.config import FAMILY_PARTS
from nxcc.driver.train.config import TrainConfig
from nxcc.driver.train.data import Batches, load_tokens, npy_files
from nxcc.driver.train.model_stage import pieces_text, plan_pipeline


def describe(config: TrainConfig) -> dict[str, object]:
    """The run's layout, batches, model and data as plain values. Reads the token files
    (so their problems are found here); writes nothing."""
    d = config.distributed
    layout = d.layout
    data = config.data
    files = npy_files(data.train_dir)
    vocab = config.model.vocab_size if config.model is not None else None
    batches = Batches(load_tokens(data.train_dir, vocab), data.seq_length,
                      data.global_batch_size)
    return {
        "config": config.source,
        "name": config.name,
        "world_size": layout.world_size,
        "devices": config.trainer.devices,
        "num_nodes": config.trainer.num_nodes,
        "tp": layout.tp, "pp": layout.pp, "dp": layout.dp,
        "micro_batch_size": data.micro_batch_size,
        "global_batch_size": data.global_batch_size,
        "micro_batches_per_step": data.micro_batches_per_step(layout.dp),
        "seq_length": data.seq_length,
        "tokens_per_step": data.global_batch_size * data.seq_length,
        "sequence_parallel": d.sequence_parallel, "zero1": d.zero1,
        "kv_replicator": d.kv_replicator,
        "precision": config.recipe.label,
        "model": _model(config),
        "pipeline": _pipeline(config),
        "data": {"files": len(files), "tokens": int(batches.tokens.size),
                 "sequences": batches.num_sequences,
                 "batches_per_epoch": batches.batches_per_epoch},
        "groups": {kind: [list(g) for g in layout.groups(kind)] for kind in ("tp", "dp", "pp")},
        "ranks": [{"rank": r, "tp": c.tp, "pp": c.pp, "dp": c.dp}
                  for r in range(layout.world_size) for c in (layout.coords(r),)],
        "exp_dir": config.exp_manager.exp_dir,
        "max_steps": config.trainer.max_steps,
        "ignored_keys": list(config.ignored_keys),
    }


def _pipeline(config: TrainConfig) -> dict[str, object] | None:
    """The built-in decoder's stages with PP > 1 (as the run's log line names them), else
    None."""
    m = config.model
    if m is None or config.distributed.pipeline_model_parallel_size == 1:
        return None
    plan = plan_pipeline(m, config.distributed, config.data)
    stages = range(config.distributed.pipeline_model_parallel_size)
    return {"automatic": plan.automatic, "split": plan.split,
            "stages": [pieces_text(plan.pieces(s, m.num_layers)) for s in stages],
            "cut_pieces": list(plan.cuts), "flops_per_micro_batch": list(plan.flops or ()),
            "line": plan.describe(m.num_layers)}


def _model(config: TrainConfig) -> dict[str, object]:
    if config.onnx is not None:
        return {"onnx": config.onnx.path, "loss_input": config.onnx.loss_input,
                "label_input": config.onnx.label_input,
                "recompute": config.onnx.activations_checkpoint_granularity}
    m = config.model
    assert m is not None
    return {"family": m.family, "num_layers": m.num_layers, "hidden_size": m.hidden_size,
            "num_attention_heads": m.num_attention_heads, "num_kv_heads": m.num_kv_heads,
            "ffn_hidden_size": m.ffn_hidden_size, "vocab_size": m.vocab_size,
            "recompute": m.activations_checkpoint_granularity,
            "pipeline_cuts": list(m.pipeline_cuts), "sliding_window": m.sliding_window_size,
            "architecture": list(m.architecture)}


def _groups(groups: list[list[int]]) -> str:
    return " ".join("[" + ",".join(str(r) for r in g) + "]" for g in groups)


def describe_lines(info: dict[str, object]) -> list[str]:
    """The text of `describe`'s result, one fact a line."""
    m = info["model"]
    assert isinstance(m, dict)
    if "onnx" in m:
        model = f"ONNX {m['onnx']} (loss on {m['loss_input']}, labels {m['label_input']})"
    else:
        model = (f"{m['family']}, {m['num_layers']} layers, hidden {m['hidden_size']}, "
                 f"{m['num_attention_heads']} heads ({m['num_kv_heads']} key/value), "
                 f"ffn {m['ffn_hidden_size']}, vocab {m['vocab_size']}")
        parts = m.get("architecture") or []
        if parts and tuple(parts) != FAMILY_PARTS.get(str(m["family"])):
            model += f" ({', '.join(parts)})"
        if m.get("sliding_window") is not None:
            model += f", sliding window {m['sliding_window']}"
    data = info["data"]
    groups = info["groups"]
    assert isinstance(data, dict) and isinstance(groups, dict)
    cuts = m.get("pipeline_cuts") or []
    pipeline = info.get("pipeline")
    on = {True: "on", False: "off"}
    return [
        f"config: {info['config']} ({info['name']})",
        f"model: {model}",
        f"world: {info['world_size']} ranks = {info['devices']} devices x "
        f"{info['num_nodes']} node(s); TP {info['tp']} x PP {info['pp']} x DP {info['dp']}",
        f"batch: global {info['global_batch_size']} = micro {info['micro_batch_size']} x "
        f"DP {info['dp']} x {info['micro_batches_per_step']} micro-batches per step; "
        f"seq_length {info['seq_length']}, {info['tokens_per_step']} tokens per step",
        f"data: {data['tokens']} tokens in {data['files']} file(s), {data['sequences']} "
        f"sequences, {data['batches_per_epoch']} global batches per epoch",
        f"features: sequence_parallel {on[bool(info['sequence_parallel'])]}, zero1 "
        f"{on[bool(info['zero1'])]}, recompute {m.get('recompute') or 'none'}, "
        f"kv_replicator {info['kv_replicator']}, precision {info['precision']}",
        pipeline["line"] if isinstance(pipeline, dict) else "pipeline: one stage"
        if info["pp"] == 1 else "pipeline cuts: " + ", ".join(cuts),
        f"TP groups: {_groups(groups['tp'])}",
        f"DP groups: {_groups(groups['dp'])}",
        f"PP groups: {_groups(groups['pp'])}",
        f"steps: {info['max_steps']}; exp_dir: {info['exp_dir']}",
    ]
