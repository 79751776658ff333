"""The search's composition of a stage from its one- and two-layer builds is exact in
everything but the programs' peaks, and its layouts are every valid one."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from nxcc.driver.plan import load_for_plan
from nxcc.driver.plan.search import composed, layouts
from nxcc.driver.plan.stages import stage_figures
from nxcc.driver.train.model_stage import plan_pipeline
from tests.driver.train.train_yaml import LLAMA


@pytest.mark.parametrize("recompute", [None, "selective", "full"])
def test_a_composed_stage_is_the_built_one(recompute: str | None) -> None:
    config, _ = load_for_plan(str(LLAMA), ("model.num_layers=8",))
    assert config.model is not None
    config = replace(config, model=replace(config.model,
                                           activations_checkpoint_granularity=recompute))
    pipeline = plan_pipeline(config.model, config.distributed, config.data, flops=False)
    for stage in range(2):  # 4 layers each: composed from 1 and 2
        built, made = stage_figures(config, pipeline, stage), composed(config, pipeline, stage)
        assert (made.param_elements, made.flat_elements, made.stash_bytes) == (
            built.param_elements, built.flat_elements, built.stash_bytes)
        for name, program in built.programs.items():
            a, b = program.work, made.programs[name].work
            assert (a.tensor_flops, a.vector_flops, a.hbm_bytes) == (
                b.tensor_flops, b.vector_flops, b.hbm_bytes), name
            assert Counter(a.collectives) == Counter(b.collectives), name
            assert made.programs[name].peak_bytes == pytest.approx(program.peak_bytes,
                                                                   rel=0.25)


def test_layouts_are_every_valid_one() -> None:
    config, _ = load_for_plan(str(LLAMA))
    found = layouts(config, 1)  # 8 ranks; 4 heads, 2 key/value heads, 4 layers, batch 8
    keys = {(c.distributed.tensor_model_parallel_size, c.distributed.pipeline_model_parallel_size,
             c.distributed.data_parallel_size, c.distributed.sequence_parallel,
             c.distributed.zero1, c.model.activations_checkpoint_granularity if c.model
             else None, c.data.micro_batch_size) for c in found}
    assert len(keys) == len(found)
    assert {k[:3] for k in keys} == {(tp, pp, 8 // (tp * pp)) for tp in (1, 2, 4)
                                     for pp in (1, 2, 4) if 8 % (tp * pp) == 0}
    assert all(k[2] > 1 or not k[4] for k in keys)  # ZeRO-1 only with DP > 1
    assert all(k[0] > 1 or not k[3] for k in keys)  # sequence parallel only with TP > 1
    assert {k[6] for k in keys} == {1, 2, 4, 8}
    assert (4, 2, 1, True, False, "full", 8) in keys
