"""The plan's figures are those of the programs `train` runs: a real run of the shipped
tiny Llama (TP2 x PP2 x DP2, sequence parallel, ZeRO-1, selective recomputation; also with
tied embeddings across the stages) and its plan agree on every rank's parameter, gradient,
optimizer-state and activation bytes (`metrics.jsonl`), on each stage program's FLOPs, and
on its collectives' bytes as the engine compiles them."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from nxcc.driver.plan import plan_training
from nxcc.driver.plan.stages import stage_figures
from nxcc.driver.train.config import load_config
from nxcc.driver.train.engine import apply_precision
from nxcc.driver.train.model_stage import decoder_builder
from nxcc.driver.train.prepare import engine_settings
from nxcc.driver.train.run import run_training
from nxcc.driver.train.stage import StagePlan
from nxcc.driver.train.stage_program import compile_function
from nxcc.ir.flops import module_flops
from nxcc.nxd.models.decoder import program
from tests.driver.train.train_yaml import LLAMA

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")


def _overrides(tmp_path: Path, *extra: str) -> tuple[str, ...]:
    return (f"exp_manager.exp_dir={tmp_path}", "trainer.max_steps=1",
            "exp_manager.resume_if_exists=false", "exp_manager.create_checkpoint_callback=false",
            *extra)


@pytest.mark.parametrize("extra", [(), ("model.num_layers=5",
                                        "model.activations_checkpoint_granularity=full"),
                                   ("precision.type=mixed_precision",),
                                   ("++model.share_embeddings_and_output_weights=true",)])
def test_memory_figures_are_the_runs(tmp_path: Path, extra: tuple[str, ...]) -> None:
    overrides = _overrides(tmp_path, *extra)
    run_training(load_config(str(LLAMA), overrides), lambda _: None)
    with open(tmp_path / "metrics.jsonl", encoding="utf-8") as f:
        ranks = json.loads(f.readline())["memory_per_rank"]
    plan = plan_training(str(LLAMA), overrides)
    layout = plan.config.distributed.layout
    bf16 = plan.config.recipe.bf16_products
    for rank, measured in enumerate(ranks):
        hbm = plan.stages[layout.coords(rank).pp].hbm
        activations = measured.pop("activation_bytes")
        assert measured == {
            "parameter_bytes": hbm["parameters"], "gradient_bytes": hbm["gradients"],
            "optimizer_state_bytes": hbm["optimizer_state"] + hbm["master_weights"]}, rank
        if bf16:  # the device keeps bf16 activations where nxcc's programs keep f32
            assert activations / 2 <= hbm["activations"] + hbm["scratch"] < activations
        else:
            assert activations == hbm["activations"] + hbm["scratch"], rank


def _compiled_collectives(compiled: dict) -> Counter:
    found: Counter = Counter()
    for fn in compiled["functions"].values():
        slots = fn["slots"]
        for ins in fn["instructions"]:
            kind = ins["op"].removesuffix("_start")  # the latency-hiding pass's async form
            if kind in COLLECTIVES and not ins["op"].endswith("_done"):
                nbytes = 0
                for a in ins["args"]:
                    shape, dtype = slots[a]["shape"], slots[a]["dtype"]
                    size = 1
                    for d in shape:
                        size *= d
                    nbytes += size * {"f32": 4, "f64": 8, "bf16": 2, "s32": 4}[dtype]
                found[(kind, nbytes)] += 1
    return found


def test_flops_and_collectives_are_the_programs(tmp_path: Path) -> None:
    config = load_config(str(LLAMA), _overrides(tmp_path), plan=True)
    assert config.model is not None
    settings = engine_settings(config)
    build, pipeline = decoder_builder(config.model, config.seed, config.distributed,
                                      config.data)
    d = config.distributed
    for stage in range(d.pipeline_model_parallel_size):
        figures = stage_figures(config, pipeline, stage)
        built = build(StagePlan(0, d.tensor_model_parallel_size, stage,
                                d.pipeline_model_parallel_size, config.data.micro_batch_size,
                                config.data.seq_length, d.sequence_parallel))
        names = list(figures.programs)
        for name in names:
            assert figures.programs[name].work.flops == \
                module_flops(program(built.module, name)), (stage, name)
        apply_precision(built.module, names, len(built.params), config.recipe)
        for name in names:
            planned = Counter((c.kind, c.bytes)
                              for c in figures.programs[name].work.collectives)
            compiled = compile_function(built.module, name, settings.options)
            assert _compiled_collectives(compiled.program) == planned, (stage, name)
