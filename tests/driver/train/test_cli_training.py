"""`neuronx-cc compile --training` and `run --steps` as a user runs them: state carried and
resumed, schedules, clipping, the manifest's aliases, and one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from nxcc.backend.neff import read_neff
from tests.cli_helpers import REPO, assert_one_line_error, neuronx_cc

MLP = str(REPO / "examples" / "mlp.onnx")
CE = ["--loss", "cross-entropy", "--loss-input", "y", "--label-input", "labels"]


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    path = tmp_path / "batch.npz"
    np.savez(path, x=rng.normal(size=(4, 16)).astype(np.float32),
             labels=np.array([1, 2, -100, 9]))
    return path


def compile_step(tmp_path: Path, *flags: str, model: str = MLP, name: str = "step.neff"
                 ) -> Path:
    neff = tmp_path / name
    result = neuronx_cc("compile", model, "--target", "trn1", "--training", *flags,
                        "--output", str(neff))
    assert result.returncode == 0, result.stderr
    return neff


def run_steps(neff: Path, batch: Path, steps: int, tmp_path: Path, *flags: str
              ) -> dict[str, np.ndarray]:
    out = tmp_path / "out.npz"
    result = neuronx_cc("run", str(neff), "--inputs", str(batch), "--steps", str(steps),
                        "--output", str(out), "-q", *flags)
    assert result.returncode == 0, result.stderr
    with np.load(out) as o:
        return {k: o[k] for k in o.files}


def test_state_saved_and_loaded_resumes_the_same_run(tmp_path: Path, batch: Path) -> None:
    neff = compile_step(tmp_path, *CE, "--optimizer", "adamw", "--lr", "1e-2",
                        "--weight-decay", "0.01")
    whole = run_steps(neff, batch, 6, tmp_path)["loss"]
    state = tmp_path / "s.npz"
    first = run_steps(neff, batch, 3, tmp_path, "--save-state", str(state))["loss"]
    rest = run_steps(neff, batch, 3, tmp_path, "--load-state", str(state))["loss"]
    np.testing.assert_array_equal(np.concatenate([first, rest]), whole)
    assert whole[-1] < whole[0]
    with np.load(state) as s:
        assert sorted(s.files) == sorted(
            ["0.weight", "0.bias", "2.weight", "2.bias", "optimizer.step",
             *(f"{p}.adam_{m}" for p in ("0.weight", "0.bias", "2.weight", "2.bias")
               for m in "mv")])
        assert int(s["optimizer.step"]) == 3


def test_the_manifest_declares_state_and_aliases(tmp_path: Path) -> None:
    neff = compile_step(tmp_path, *CE, "--optimizer", "sgd", "--momentum", "0.9", "--lr", "0.1")
    manifest = read_neff(neff).manifest
    names = [e["name"] for e in manifest["state"]]
    assert names == ["0.weight", "0.bias", "2.weight", "2.bias", "0.weight.momentum",
                     "0.bias.momentum", "2.weight.momentum", "2.bias.momentum",
                     "optimizer.step"]
    assert [o["name"] for o in manifest["outputs"]][0] == "loss"
    for entry, alias in zip(manifest["state"], manifest["input_output_alias"], strict=True):
        assert (alias["input"], alias["output"]) == (entry["input"], entry["output"])
        assert manifest["inputs"][entry["input"]]["name"] == entry["name"]
    assert json.dumps(manifest["state"][4]["init"]) == '{"zeros": true}'
    shown = neuronx_cc("inspect-neff", str(neff)).stdout
    assert "0.weight: float32[32, 16]  (state: output 1 feeds it next execution)" in shown


def test_warmup_holds_the_first_step_and_grad_norm_is_reported(tmp_path: Path,
                                                               batch: Path) -> None:
    neff = compile_step(tmp_path, *CE, "--optimizer", "sgd", "--lr", "0.5",
                        "--warmup-steps", "2", "--decay", "cosine", "--max-steps", "4",
                        "--clip-grad-norm", "0.1", "--output-grad-norm")
    out = run_steps(neff, batch, 6, tmp_path)
    loss, norm = out["loss"], out["grad_norm"]
    assert loss.shape == norm.shape == (6,)
    assert loss[1] == loss[0]  # lr 0 at step 0
    assert loss[2] < loss[1]
    assert loss[5] == loss[4]  # cosine decay reached 0 at step 4
    assert np.all(norm > 0)


def test_mse_and_an_explicit_trainable_list(tmp_path: Path, batch: Path) -> None:
    rng = np.random.default_rng(1)
    data = tmp_path / "mse.npz"
    np.savez(data, x=rng.normal(size=(4, 16)).astype(np.float32),
             target=rng.normal(size=(4, 10)).astype(np.float32))
    neff = compile_step(tmp_path, "--loss", "mse", "--loss-input", "y", "--label-input",
                        "target", "--optimizer", "adam", "--lr", "1e-2",
                        "--trainable", "2.weight,2.bias")
    state = tmp_path / "s.npz"
    loss = run_steps(neff, data, 4, tmp_path, "--save-state", str(state))["loss"]
    assert loss[-1] < loss[0]
    with np.load(state) as s:
        assert "0.weight" not in s.files and "2.weight.adam_v" in s.files


def test_a_mismatched_state_file_is_refused_naming_it(tmp_path: Path, batch: Path) -> None:
    neff = compile_step(tmp_path, *CE, "--optimizer", "sgd", "--lr", "0.1")
    state = tmp_path / "s.npz"
    run_steps(neff, batch, 1, tmp_path, "--save-state", str(state))
    with np.load(state) as s:
        arrays = {k: s[k] for k in s.files}
    arrays["0.bias"] = np.zeros(31, np.float32)
    np.savez(state, **arrays)
    result = neuronx_cc("run", str(neff), "--inputs", str(batch), "--steps", "1",
                        "--load-state", str(state))
    assert_one_line_error(result, "state '0.bias' has shape [31]", "[32]")
    del arrays["0.bias"]
    np.savez(state, **arrays)
    result = neuronx_cc("run", str(neff), "--inputs", str(batch), "--load-state", str(state))
    assert_one_line_error(result, "state file has no '0.bias'")


def _no_weights_model(tmp_path: Path) -> str:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "plain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    path = tmp_path / "plain.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


@pytest.mark.parametrize("flags, fragments", [
    (["--optimizer", "lamb", "--lr", "1"], ["--optimizer 'lamb' is not one of adam, adamw, sgd"]),
    (["--optimizer", "sgd"], ["--training needs --lr"]),
    (["--optimizer", "sgd", "--lr", "1", "--trainable", "nope"],
     ["--trainable 'nope' is not a floating-point initializer"]),
    (["--optimizer", "adamw", "--lr", "1", "--momentum", "0.9"], ["--momentum applies to"]),
    (["--optimizer", "sgd", "--lr", "1", "--decay", "cosine"], ["--decay cosine needs"]),
])
def test_malformed_requests_end_in_one_line(tmp_path: Path, flags: list[str],
                                            fragments: list[str]) -> None:
    result = neuronx_cc("compile", MLP, "--target", "trn1", "--training", *CE, *flags,
                        "--output", str(tmp_path / "x.neff"))
    assert_one_line_error(result, "NCC_EARG001", *fragments)
    assert not (tmp_path / "x.neff").exists()


def test_a_loss_on_an_output_it_cannot_reduce(tmp_path: Path) -> None:
    model = _no_weights_model(tmp_path)
    result = neuronx_cc("compile", model, "--target", "trn1", "--training", "--loss", "mse",
                        "--loss-input", "nope", "--label-input", "t", "--optimizer", "sgd",
                        "--lr", "1", "--output", str(tmp_path / "x.neff"))
    assert_one_line_error(result, "--loss-input 'nope' is not an output", "outputs: y")
    labels_of_wrong_kind = tmp_path / "scalar.onnx"
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)], "scalar",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              labels_of_wrong_kind)
    result = neuronx_cc("compile", str(labels_of_wrong_kind), "--target", "trn1", "--training",
                        *["--loss", "cross-entropy", "--loss-input", "y", "--label-input", "t",
                          "--optimizer", "sgd", "--lr", "1"], "--output",
                        str(tmp_path / "x.neff"))
    assert_one_line_error(result, "--loss cross-entropy on output 'y'", "class dimension")


def test_no_trainable_parameter(tmp_path: Path) -> None:
    result = neuronx_cc("compile", _no_weights_model(tmp_path), "--target", "trn1",
                        "--training", "--loss", "mse", "--loss-input", "y", "--label-input",
                        "t", "--optimizer", "sgd", "--lr", "1", "--output",
                        str(tmp_path / "x.neff"))
    assert_one_line_error(result, "no trainable parameter")


def test_training_flags_need_training_and_inference_neffs_keep_no_state(tmp_path: Path) -> None:
    result = neuronx_cc("compile", MLP, "--target", "trn1", "--optimizer", "sgd", "--output",
                        str(tmp_path / "x.neff"))
    assert_one_line_error(result, "--optimizer needs --training")
    neff = tmp_path / "plain.neff"
    assert neuronx_cc("compile", MLP, "--target", "trn1", "--output", str(neff)).returncode == 0
    x = tmp_path / "x.npz"
    np.savez(x, x=np.zeros((4, 16), np.float32))
    result = neuronx_cc("run", str(neff), "--inputs", str(x), "--save-state",
                        str(tmp_path / "s.npz"))
    assert_one_line_error(result, "keeps no state")


def test_print_ir_after_differentiate_shows_the_step(tmp_path: Path) -> None:
    result = neuronx_cc("compile", MLP, "--target", "trn1", "--training", *CE, "--optimizer",
                        "sgd", "--lr", "0.1", "--print-ir-after", "differentiate", "--output",
                        str(tmp_path / "x.neff"))
    assert result.returncode == 0, result.stderr
    assert "IR after differentiate" in result.stdout
    assert '"loss": f32[]' in result.stdout and "%optimizer.step: s32[]" in result.stdout


def test_bf16_weights_stall_on_small_updates_unless_rounded_stochastically(
        tmp_path: Path, batch: Path) -> None:
    """Weights kept in bf16: updates below bf16's resolution are lost when rounded to
    nearest; stochastic rounding keeps them on average, following the f32 run."""
    drops = {}
    for mode, flags in (("f32", []), ("nearest", ["--bf16-weights"]),
                        ("stochastic", ["--bf16-weights", "--stochastic-rounding"])):
        neff = compile_step(tmp_path, *CE, "--optimizer", "sgd", "--lr", "2e-3", *flags,
                            name=f"{mode}.neff")
        state = tmp_path / f"{mode}.npz"
        loss = run_steps(neff, batch, 40, tmp_path, "--save-state", str(state))["loss"]
        drops[mode] = loss[0] - loss[-1]
        if mode != "f32":
            with np.load(state) as s:
                assert s["0.weight"].dtype.itemsize == 2  # stored as bf16
                assert int(s["optimizer.step"]) == 40
    assert drops["f32"] > 0
    assert drops["nearest"] < 0.2 * drops["f32"]
    assert 0.5 * drops["f32"] < drops["stochastic"] < 1.5 * drops["f32"]
