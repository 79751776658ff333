"""NxD's precision types in the engine: the recipes and `manual`'s flags, stochastic
rounding's statistics and keys, bf16 products and weights in the compiled stage programs,
curves near fp32 and equal across layouts, memory figures, resume."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from nxcc.driver.train.config import load_config
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.precision import RECIPES, element_ids, to_bf16
from nxcc.driver.train.run import run_training
from tests.cli_helpers import REPO, assert_one_line_error, neuronx_cc

EXAMPLE = REPO / "examples" / "train" / "hf_llama_tiny_gqa.yaml"
ONE_RANK = ("trainer.devices=1", "distributed_strategy.tensor_model_parallel_size=1",
            "distributed_strategy.pipeline_model_parallel_size=1",
            "distributed_strategy.zero1=false", "distributed_strategy.sequence_parallel=false")
SMALL = ("model.encoder_seq_length=16", "exp_manager.resume_if_exists=false",
         "trainer.max_steps=8", "model.optim.sched.max_steps=20")


def _train(exp: Path, *overrides: str) -> dict:
    config = load_config(str(EXAMPLE), (f"exp_manager.exp_dir={exp}", *SMALL, *overrides))
    return run_training(config, lambda _: None)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    out = {}
    for kind in ("fp32", "mixed_precision", "bf16SR"):
        out[kind] = _train(tmp_path_factory.mktemp(kind), *ONE_RANK, f"precision.type={kind}")
    return out


def _config(*overrides: str):  # noqa: ANN202
    return load_config(str(EXAMPLE), overrides)


def test_recipes_and_manual_flags() -> None:
    assert _config("precision.type=mixed_precision").recipe == RECIPES["mixed_precision"]
    manual = _config("precision.type=manual", "precision.xla_use_bf16='1'",
                     "precision.master_weights=true", "precision.fp32_grad_acc=0",
                     "precision.neuron_rt_stochastic_rounding_en=1").recipe
    assert (manual.bf16_weights, manual.master_weights, manual.fp32_grad_acc,
            manual.stochastic_rounding) == (True, True, False, True)
    assert manual.label == "manual(bf16,master,sr)"
    plain = _config("precision.type=manual").recipe  # the example's flags: all off
    assert not plain.bf16_weights and plain.fp32_grad_acc
    with pytest.raises(TrainConfigError, match="precision.master_weights: expected 0, 1"):
        _config("precision.type=manual", "precision.master_weights=maybe")


def test_a_bad_precision_type_is_one_line(tmp_path: Path) -> None:
    r = neuronx_cc("train", str(EXAMPLE), "--dry-run", "precision.type=bf16")
    assert_one_line_error(r, "precision.type", "mixed_precision")


def test_stochastic_rounding_is_unbiased_and_keyed() -> None:
    x = np.full(200_000, 1.0 + 2 ** -10, np.float32)  # 1/8 of the way to the next bf16
    ids = element_ids(3, x.size)
    low = to_bf16(x, True, ids, seed=7, step=2).astype(np.float32)
    assert set(np.unique(low)) == {1.0, 1.0078125}
    assert abs(low.mean() - x[0]) < 5 * 0.0078125 * np.sqrt(0.125 * 0.875 / x.size)
    again = to_bf16(x, True, ids, seed=7, step=2)
    assert np.array_equal(again.view(np.uint16), low.astype(ml_dtypes.bfloat16).view(np.uint16))
    other = to_bf16(x, True, ids, seed=7, step=3).astype(np.float32)
    assert not np.array_equal(other, low)
    assert np.array_equal(to_bf16(x, False).astype(np.float32), np.ones_like(x))
    special = np.array([np.inf, -np.inf, np.nan, 0.0], np.float32)
    out = to_bf16(special, True, element_ids(0, 4)).astype(np.float32)
    assert np.isinf(out[:2]).all() and np.isnan(out[2]) and out[3] == 0.0


def test_curves_stay_near_fp32_without_being_it(runs: dict[str, dict]) -> None:
    fp32 = np.array(runs["fp32"]["losses"])
    for kind in ("mixed_precision", "bf16SR"):
        losses = np.array(runs[kind]["losses"])
        assert abs(losses[-1] - fp32[-1]) / fp32[-1] < 0.02, kind
        assert not np.array_equal(losses, fp32), kind
        assert losses[-1] < losses[0] - 0.5, kind  # it learns


def test_memory_figures_follow_the_dtypes(runs: dict[str, dict]) -> None:
    f, m, s = (runs[k]["memory"][0] for k in ("fp32", "mixed_precision", "bf16SR"))
    assert m["parameter_bytes"] * 2 == f["parameter_bytes"] == s["parameter_bytes"] * 2
    assert m["gradient_bytes"] == f["gradient_bytes"] == 2 * s["gradient_bytes"]
    # AdamW's two f32 slots, plus the f32 master copy; bf16SR keeps both slots in bf16
    assert m["optimizer_state_bytes"] == f["optimizer_state_bytes"] * 3 // 2
    assert s["optimizer_state_bytes"] * 2 == f["optimizer_state_bytes"]


def test_stage_programs_multiply_in_bf16(tmp_path: Path) -> None:
    from nxcc.driver.train.engine import EngineSettings, apply_precision
    from nxcc.driver.train.model_stage import decoder_builder
    from nxcc.driver.train.stage import StagePlan
    from nxcc.ir.printer import print_module

    config = _config(f"exp_manager.exp_dir={tmp_path}", *SMALL, *ONE_RANK,
                     "precision.type=mixed_precision")
    build, _ = decoder_builder(config.model, config.seed, config.distributed, config.data)
    stage = build(StagePlan(0, 1, 0, 1, 1, 16, False))
    apply_precision(stage.module, ["forward_backward"], len(stage.params), config.recipe)
    text = print_module(stage.module)
    assert "dot_general(" in text and "bf16[" in text
    params = stage.module.functions["forward_backward"].params[:len(stage.params)]
    assert {p.type.dtype.value for p in params} == {"bf16"}
    assert EngineSettings.__dataclass_fields__["precision"]  # the engine takes the recipe


@pytest.mark.usefixtures("any_even_ranks")  # 4 ranks
def test_layouts_agree_in_mixed_precision(runs: dict[str, dict], tmp_path: Path) -> None:
    four = _train(tmp_path, "trainer.devices=4", "precision.type=mixed_precision")
    np.testing.assert_allclose(four["losses"], runs["mixed_precision"]["losses"], rtol=2e-4)


def test_bf16sr_resumes_exactly_and_refuses_another_precision(runs: dict[str, dict],
                                                                tmp_path: Path) -> None:
    common = (*ONE_RANK, "precision.type=bf16SR",
              "exp_manager.checkpoint_callback_params.every_n_train_steps=4")
    _train(tmp_path, *common, "trainer.max_steps=4")
    resumed = _train(tmp_path, *common, "exp_manager.resume_if_exists=true")
    assert resumed["losses"] == runs["bf16SR"]["losses"][4:]
    shard = np.load(tmp_path / "checkpoints" / "step_8" / "params_tp0_pp0.npz")
    for name in shard.files:  # bf16 weights, stored widened
        w = shard[name]
        assert np.array_equal(w.astype(ml_dtypes.bfloat16).astype(np.float32), w), name
    with pytest.raises(TrainConfigError, match="written with precision.type bf16SR"):
        _train(tmp_path, *ONE_RANK, "precision.type=fp32", "exp_manager.resume_if_exists=true",
               "trainer.max_steps=12")
