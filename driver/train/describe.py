"""What a training run will do, as `neuronx-cc train --dry-run` shows it (text or JSON).

`describe(job)` reads a job `prepare.prepare_job` made, so the dry run has made every check
the real run makes before it shows anything."""

from __future__ import annotations

from nxcc.driver.train.prepare import Job
from nxcc.nxd.models.decoder.config import FAMILY_PARTS


def _data(job: Job) -> dict[str, object]:
    data = job.config.data
    out: dict[str, object] = {"source": data.source, **job.batches.summary()}
    if job.validation is not None:
        out["validation"] = {**job.validation.summary(),
                             "every": data.validation.interval,
                             "batches": job.validation_batches}
    v = job.config.vocabulary
    if v is not None:
        out["tokenizer"] = {"source": v.source, "size": v.size, "eod_id": v.eod_id}
    return out


def describe(job: Job) -> dict[str, object]:
    """The run's layout, batches, model and data as plain values."""
    config = job.config
    d = config.distributed
    layout = d.layout
    data = config.data
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
        "model": _model(job),
        "pipeline": _pipeline(job),
        "data": _data(job),
        "tensorboard": config.exp_manager.tensorboard,
        "initial_weights": config.exp_manager.resume_from_checkpoint,
        "groups": {kind: [list(g) for g in layout.groups(kind)] for kind in ("tp", "dp", "pp")},
        "ranks": [{"rank": r, "tp": c.tp, "pp": c.pp, "dp": c.dp}
                  for r in range(layout.world_size) for c in (layout.coords(r),)],
        "exp_dir": config.exp_manager.exp_dir,
        "max_steps": config.trainer.max_steps,
        "ignored_keys": list(config.ignored_keys),
        "instance": job.where.describe(),
    }


def _pipeline(job: Job) -> dict[str, object] | None:
    """The stages with PP > 1 (as the run's log line names them), else None."""
    plan = job.pipeline
    if job.config.distributed.pipeline_model_parallel_size == 1 or not plan.cuts:
        return None
    return {"automatic": plan.automatic, "split": plan.split, "stages": plan.stage_labels(),
            "cut_pieces": list(plan.cuts), "flops_per_micro_batch": list(plan.flops or ()),
            "line": plan.describe()}


def _model(job: Job) -> dict[str, object]:
    config = job.config
    if config.module is not None:
        mod = config.module
        return {"module": mod.spec, "args": mod.kwargs,
                "inputs": [{"name": i.name, "shape": list(i.type.shape[1:]),
                            "dtype": i.type.dtype.value} for i in job.inputs],
                "recompute": mod.activations_checkpoint_granularity,
                "pipeline_cuts": list(mod.pipeline_cuts)}
    if config.onnx is not None:
        return {"onnx": config.onnx.path, "loss_input": config.onnx.loss_input,
                "label_input": config.onnx.label_input,
                "recompute": config.onnx.activations_checkpoint_granularity}
    m = config.model
    assert m is not None
    return {"family": m.family, "num_layers": m.num_layers, "hidden_size": m.hidden_size,
            "num_attention_heads": m.num_attention_heads, "num_kv_heads": m.num_kv_heads,
            "ffn_hidden_size": m.ffn_hidden_size, "vocab_size": m.vocab_size,
            "tied_embeddings": m.share_embeddings_and_output_weights,
            "recompute": m.activations_checkpoint_granularity,
            "pipeline_cuts": list(m.pipeline_cuts), "sliding_window": m.sliding_window_size,
            "architecture": list(m.architecture)}


def _data_line(data: dict) -> str:
    if data["kind"] == "arrays":
        return (f"data: {data['source']} (one .npy per input: {', '.join(data['inputs'])}): "
                f"{data['sequences']} examples, {data['batches_per_epoch']} global batches "
                "per epoch")
    what = f"{data['tokens']} tokens, " if "tokens" in data else ""
    line = (f"data: {data['source']} ({data['kind']}): {what}{data['sequences']} sequences, "
            f"{data['batches_per_epoch']} global batches per epoch")
    t = data.get("tokenizer")
    if isinstance(t, dict):
        line += f"; tokenizer {t['source']}: {t['size']} ids"
    return line


def _validation_line(data: dict) -> list[str]:
    v = data.get("validation")
    if not isinstance(v, dict):
        return []
    return [f"validation: every {v['every']} steps, {v['batches']} global batches of "
            f"{v['sequences']} sequences ({v['kind']})"]


def _arguments(args: object) -> str:
    assert isinstance(args, dict)
    return ", ".join(f"{k}={v!r}" for k, v in args.items())


def _groups(groups: list[list[int]]) -> str:
    return " ".join("[" + ",".join(str(r) for r in g) + "]" for g in groups)


def _instance_line(where: object) -> str:
    assert isinstance(where, dict)
    return (f"instance: {where['instance_type']} ({where['instance_source']}), "
            f"{where['logical_cores']} NeuronCores {where['software_id']} at LNC "
            f"{where['lnc']}; stages compiled for {where['target']}")


def describe_lines(info: dict[str, object]) -> list[str]:
    """The text of `describe`'s result, one fact a line."""
    m = info["model"]
    assert isinstance(m, dict)
    if "onnx" in m:
        model = f"ONNX {m['onnx']} (loss on {m['loss_input']}, labels {m['label_input']})"
    elif "module" in m:
        model = f"{m['module']}({_arguments(m['args'])}); inputs " + ", ".join(
            f"{i['name']} {i['dtype']}[{','.join(map(str, i['shape']))}]"
            for i in m["inputs"])
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
        _instance_line(info["instance"]),
        f"batch: global {info['global_batch_size']} = micro {info['micro_batch_size']} x "
        f"DP {info['dp']} x {info['micro_batches_per_step']} micro-batches per step"
        + (f"; seq_length {info['seq_length']}, {info['tokens_per_step']} tokens per step"
           if info["seq_length"] else ""),
        _data_line(data),
        *_validation_line(data),
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
