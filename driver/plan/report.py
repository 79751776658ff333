"""A plan as people read it (`plan_lines`) and as programs read it (`plan_json`).

The JSON object (`neuronx-cc train CONFIG --plan --json`) holds at least `fits`,
`hbm_per_core_bytes` (the breakdown of the fullest core, with its `total`),
`hbm_capacity_bytes`, `step_time_s`, `sequences_per_s`, `tokens_per_s` and `mfu`; then the
layout, the machine, each stage's figures and the efficiency constants used.
"""

from __future__ import annotations

from nxcc.driver.plan.plan import HBM_KEYS, Plan

LABELS = {"parameters": "parameters", "gradients": "gradients",
          "optimizer_state": "optimizer state", "master_weights": "master weights",
          "activations": "activations in flight", "scratch": "scratch (program peak)",
          "collective_buffers": "collective buffers", "runtime_reserve": "runtime reserve"}


def gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"


def plan_json(plan: Plan) -> dict[str, object]:
    """The plan as one JSON-able object (see the module docstring)."""
    c, m, d = plan.config, plan.machine, plan.config.distributed
    worst = plan.worst
    return {
        "config": c.source,
        "fits": plan.fits,
        "hbm_per_core_bytes": dict(worst.hbm),
        "hbm_capacity_bytes": plan.capacity,
        "hbm_margin_bytes": plan.capacity - worst.hbm["total"],
        "fullest_stage": worst.stage,
        "step_time_s": plan.step_time_s,
        "sequences_per_s": plan.sequences_per_s,
        "tokens_per_s": plan.tokens_per_s,
        "mfu": plan.mfu,
        "model_flops_per_token": plan.model_flops_per_token,
        "model_parameters": plan.model_parameters,
        "host_memory_per_node_bytes": plan.host_bytes_per_node,
        "host_memory_capacity_bytes": m.instance.host_memory_bytes or None,  # None: unpublished
        "machine": {"instance": m.instance.name, "nodes": m.nodes, "lnc": m.lnc,
                    "ranks_per_node": m.ranks_per_node, "world_size": c.trainer.world_size},
        "layout": {"tp": d.tensor_model_parallel_size, "pp": d.pipeline_model_parallel_size,
                   "dp": d.data_parallel_size, "sequence_parallel": d.sequence_parallel,
                   "zero1": d.zero1, "kv_replicator": d.kv_replicator,
                   "recompute": c.model.activations_checkpoint_granularity if c.model
                   else None,
                   "micro_batch_size": c.data.micro_batch_size,
                   "global_batch_size": c.data.global_batch_size,
                   "micro_batches": plan.micro_batches, "seq_length": c.data.seq_length,
                   "precision": c.recipe.label},
        "pipeline": {"split": plan.pipeline.split,
                     "stages": [s.layers for s in plan.stages]},
        "time": {"pipeline_bubble_s": plan.bubble_s,
                 "dp_reduction_exposed_s": max(s.dp_exposed_s for s in plan.stages)},
        "stages": [{
            "stage": s.stage, "layers": s.layers, "micro_batches_in_flight": s.held,
            "hbm_bytes": dict(s.hbm), "forward_s": s.forward_s, "backward_s": s.backward_s,
            "forward_communication_s": s.forward_communication_s,
            "backward_communication_s": s.backward_communication_s,
            "transfer_s": s.transfer_s,
            "dp_reduction_s": s.dp_s, "dp_reduction_exposed_s": s.dp_exposed_s,
            "tied_embedding_reduction_s": s.tied_s,
            "optimizer_s": s.optimizer_s, "parameter_gather_s": s.gather_s,
            "end_s": s.end_s, "flops_per_micro_batch": s.flops_per_micro_batch,
            "parameters": s.param_elements} for s in plan.stages],
        "efficiency": {"compute": plan.efficiency.compute, "link": plan.efficiency.link,
                       "step_latency_s": plan.efficiency.step_latency_s},
    }


def plan_lines(plan: Plan) -> list[str]:
    """The plan as text, one fact a line."""
    c, m, d = plan.config, plan.machine, plan.config.distributed
    worst = plan.worst
    verdict = "fits" if plan.fits else "DOES NOT FIT"
    margin = plan.capacity - worst.hbm["total"]
    lines = [
        f"plan: {c.name} on {m.nodes} x {m.instance.name} ({c.trainer.world_size} NeuronCores"
        f", LNC {m.lnc}): TP {d.tensor_model_parallel_size} x PP "
        f"{d.pipeline_model_parallel_size} x DP {d.data_parallel_size}, sequence_parallel "
        f"{_on(d.sequence_parallel)}, zero1 {_on(d.zero1)}, recompute "
        f"{(c.model.activations_checkpoint_granularity if c.model else None) or 'none'}, "
        f"precision {c.recipe.label}",
        f"batch: global {c.data.global_batch_size} = micro {c.data.micro_batch_size} x DP "
        f"{d.data_parallel_size} x {plan.micro_batches}; seq_length {c.data.seq_length}",
        f"HBM per NeuronCore (stage {worst.stage}, {worst.layers}, the fullest): "
        f"{gib(worst.hbm['total'])} of {gib(plan.capacity)}: {verdict}, margin "
        f"{gib(margin)}",
    ]
    for key in HBM_KEYS:
        note = f" ({worst.held} micro-batches)" if key == "activations" and worst.held else ""
        lines.append(f"  {LABELS[key]:<24}{gib(worst.hbm[key]):>12}{note}")
    host = m.instance.host_memory_bytes
    lines.append(f"host memory per node: {gib(plan.host_bytes_per_node)} of "
                 f"{gib(host) if host else 'an unpublished capacity'} (each rank's "
                 "parameters in f32 while it initialises them)")
    lines.append(f"step: {plan.step_time_s:.2f} s: {plan.sequences_per_s:.2f} sequences/s, "
                 f"{plan.tokens_per_s:,.0f} tokens/s, MFU {100 * plan.mfu:.1f}%")
    slow = max(plan.stages, key=lambda s: s.forward_s + s.backward_s)
    passes = (f"forward {slow.forward_s:.3f} s, backward {slow.backward_s:.3f} s"
              if slow.backward_s else  # the last stage runs both in one program
              f"forward+backward {slow.forward_s:.3f} s (one program)")
    lines.append(f"  per micro-batch on stage {slow.stage}: {passes}, of which TP "
                 "communication "
                 f"{slow.forward_communication_s + slow.backward_communication_s:.3f} s")
    exposed = max(s.dp_exposed_s for s in plan.stages)
    lines.append(f"  pipeline bubble {plan.bubble_s:.2f} s, DP reduction "
                 f"{max(s.dp_s for s in plan.stages):.2f} s ({exposed:.2f} s after the "
                 f"backward), optimizer {max(s.optimizer_s for s in plan.stages):.3f} s, "
                 f"ZeRO-1 all-gather {max(s.gather_s for s in plan.stages):.2f} s")
    lines.append(f"pipeline ({plan.pipeline.split}): "
                 + " | ".join(s.layers for s in plan.stages))
    e = plan.efficiency
    lines.append(f"constants: compute {e.compute}, link {e.link}, ring step latency "
                 f"{1e6 * e.step_latency_s:g} us (docs/estimates.md)")
    return lines


def _on(flag: bool) -> str:
    return "on" if flag else "off"
