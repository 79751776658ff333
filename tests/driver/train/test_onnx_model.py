"""`model.onnx_path`: an ONNX model trained by `neuronx-cc train` in place of the decoder.

The 2-layer GPT PyTorch exported (tests/driver/train/data/gpt.onnx, input_ids [2, 8], vocab
64) trained on a stream that repeats one global batch gives the losses of
`neuronx-cc compile --training` + `run --steps` on that batch; one rank, DP2 and DP2 with
ZeRO-1 give the same curve; the example (examples/train/onnx_lm.yaml) learns and resumes
exactly; what cannot be trained is refused in one line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from nxcc.driver.train.config import load_config
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.metrics import read_metrics
from nxcc.driver.train.run import run_training
from tests.cli_helpers import REPO, assert_one_line_error, neuronx_cc

GPT = REPO / "tests/driver/train/data/gpt.onnx"
EXAMPLE = REPO / "examples" / "train" / "onnx_lm.yaml"
STEPS = 8


def _config(tmp: Path, tokens: np.ndarray, **sizes: int) -> Path:
    data = tmp / "data"
    data.mkdir(parents=True, exist_ok=True)
    np.save(data / "tokens.npy", tokens.astype(np.uint16))
    text = {
        "name": "gpt_onnx", "seed": 1,
        "trainer": {"devices": sizes.get("devices", 1), "max_steps": STEPS,
                    "log_every_n_steps": 1, "gradient_clip_val": None},
        "exp_manager": {"exp_dir": str(tmp / "exp"), "resume_if_exists": False},
        "distributed_strategy": {"tensor_model_parallel_size": 1,
                                 "pipeline_model_parallel_size": 1,
                                 "zero1": bool(sizes.get("zero1", 0))},
        "data": {"micro_batch_size": 2, "global_batch_size": sizes.get("global", 2),
                 "seq_length": 8, "train_dir": str(data)},
        "model": {"onnx_path": str(GPT), "onnx_loss_input": "logits",
                  "onnx_label_input": "labels",
                  "optim": {"name": "adamw", "lr": 1e-3, "weight_decay": 0.01,
                            "betas": [0.9, 0.999], "eps": 1e-8,
                            "sched": {"name": "constant"}}},
        "precision": {"type": "fp32"},
    }
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(text))
    return path


def _train(path: Path) -> list[float]:
    return run_training(load_config(str(path)), lambda _: None)["losses"]


def test_the_engine_trains_the_export_as_compile_training_does(tmp_path: Path) -> None:
    tokens = np.random.default_rng(3).integers(0, 64, 17)  # one global batch: 2 x 8 + 1
    losses = _train(_config(tmp_path, tokens))
    seqs = np.stack([tokens[:9], tokens[8:]])  # sequences share their boundary token
    np.savez(tmp_path / "batch.npz", input_ids=seqs[:, :-1].astype(np.int64),
             labels=seqs[:, 1:].astype(np.int64))
    neff, out = tmp_path / "step.neff", tmp_path / "out.npz"
    r = neuronx_cc("compile", str(GPT), "--target", "trn1", "--training", "--loss",
                   "cross-entropy", "--loss-input", "logits", "--label-input", "labels",
                   "--optimizer", "adamw", "--lr", "1e-3", "--weight-decay", "0.01",
                   "--output", str(neff))
    assert r.returncode == 0, r.stderr
    r = neuronx_cc("run", str(neff), "--inputs", str(tmp_path / "batch.npz"), "--steps",
                   str(STEPS), "--output", str(out), "-q")
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(losses, np.load(out)["loss"], rtol=1e-5)
    assert losses[-1] < losses[0] - 0.5


def test_data_parallel_and_zero1_keep_the_curve(tmp_path: Path) -> None:
    tokens = np.random.default_rng(4).integers(0, 64, 400)
    one = _train(_config(tmp_path / "one", tokens, **{"global": 4}))
    dp2 = _train(_config(tmp_path / "dp2", tokens, devices=2, **{"global": 4}))
    zero = _train(_config(tmp_path / "z", tokens, devices=2, zero1=1, **{"global": 4}))
    np.testing.assert_allclose(dp2, one, rtol=1e-5)
    np.testing.assert_allclose(zero, one, rtol=1e-5)


def test_the_example_learns_and_resumes_exactly(tmp_path: Path) -> None:
    exp = f"exp_manager.exp_dir={tmp_path}"
    whole = run_training(load_config(str(EXAMPLE), (exp, "exp_manager.resume_if_exists=false",
                                                    f"trainer.max_steps={STEPS}")),
                         lambda _: None)["losses"]
    assert whole[-1] < whole[0] - 0.3
    part = (exp, f"trainer.max_steps={STEPS // 2}", "exp_manager.resume_if_exists=false",
            "exp_manager.checkpoint_callback_params.every_n_train_steps=4")
    run_training(load_config(str(EXAMPLE), (exp.replace(str(tmp_path), str(tmp_path / "r")),
                                            *part[1:])), lambda _: None)
    rest = run_training(load_config(str(EXAMPLE), (
        f"exp_manager.exp_dir={tmp_path / 'r'}", f"trainer.max_steps={STEPS}",
        "exp_manager.checkpoint_callback_params.every_n_train_steps=4")), lambda _: None)
    assert rest["losses"] == whole[STEPS // 2:]
    records = read_metrics(str(tmp_path / "r" / "metrics.jsonl"))
    assert [r["step"] for r in records] == list(range(1, STEPS + 1))


@pytest.mark.parametrize(("change", "fragments"), [
    ("model.onnx_loss_input=scores", ("model.onnx_loss_input", "'scores'", "logits")),
    ("model.onnx_label_input=input_ids", ("model.onnx_label_input", "already")),
    ("distributed_strategy.tensor_model_parallel_size=2",
     ("tensor_model_parallel_size", "data parallelism only")),
    ("model.onnx_path=nothing.onnx", ("model.onnx_path", "no such file")),
])
def test_what_cannot_be_trained_is_one_line(tmp_path: Path, change: str,
                                            fragments: tuple[str, ...]) -> None:
    r = neuronx_cc("train", str(EXAMPLE), "--quiet", f"exp_manager.exp_dir={tmp_path}",
                   "trainer.max_steps=1", change)
    assert_one_line_error(r, "[NCC_ETRN001]", *fragments)
    assert not (tmp_path / "metrics.jsonl").exists()


def test_a_fixed_input_shape_that_does_not_fit_is_refused(tmp_path: Path) -> None:
    path = _config(tmp_path, np.arange(400) % 64, **{"global": 4})
    with pytest.raises(TrainConfigError, match="model.onnx_path"):
        run_training(load_config(str(path), ("data.micro_batch_size=1",)), lambda _: None)
