"""The nine `light_*` CNNs of onnx's test data (ResNet-50, DenseNet-121, Inception v1/v2,
ShuffleNet, SqueezeNet, VGG-19, AlexNet, ZFNet-512; 224x224 inputs) compile with the driver,
run on the runtime, and match onnxruntime (rtol 1e-3, atol 1e-4) and the output onnx ships
for its runner's input. Their weights are `ConstantOfShape` results of one value each: the
NEFF must keep them splats (at most 1.1x the model's real weight bytes plus 1 MB)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from nxcc.backend.neff import read_neff
from nxcc.backend.runtime.model import LoadedModel
from nxcc.driver.compile import compile_model
from nxcc.driver.options import CompileOptions

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
MODELS = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
          "shufflenet", "squeezenet", "vgg19", "zfnet512"]
RTOL, ATOL = 1e-3, 1e-4


def runner_input(model: onnx.ModelProto) -> tuple[str, np.ndarray]:
    """The model's data input and the array onnx's runner feeds it (arange / n)."""
    inits = {t.name for t in model.graph.initializer}
    info = next(i for i in model.graph.input if i.name not in inits)
    shape = tuple(d.dim_value for d in info.type.tensor_type.shape.dim)
    n = int(np.prod(shape))
    return info.name, (np.arange(n).reshape(shape) / n).astype(np.float32)


def real_weight_bytes(model: onnx.ModelProto) -> int:
    """Bytes of weight data the model holds: its initializers and Constant/ConstantOfShape
    values (a ConstantOfShape weight is one value)."""
    total = sum(numpy_helper.to_array(t).nbytes for t in model.graph.initializer)
    for node in model.graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                total += numpy_helper.to_array(attr.t).nbytes
    return total


@pytest.mark.parametrize("name", MODELS)
def test_light_model(name: str, tmp_path: Path) -> None:
    import onnxruntime as ort

    path = LIGHT / f"light_{name}.onnx"
    model = onnx.load(path)
    neff = tmp_path / f"{name}.neff"
    compile_model(str(path), CompileOptions(target="trn1", output=str(neff)),
                  emit=lambda _line: None)
    limit = 1.1 * real_weight_bytes(model) + (1 << 20)
    assert os.path.getsize(neff) <= limit, f"NEFF {os.path.getsize(neff)} bytes > {limit:.0f}"

    key, x = runner_input(model)
    got = list(LoadedModel(read_neff(neff)).execute({key: x}).values())[0]
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    want = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"]).run(
        None, {key: x})[0]
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    shipped = onnx.TensorProto()
    shipped.ParseFromString((LIGHT / f"light_{name}_output_0.pb").read_bytes())
    np.testing.assert_allclose(got, numpy_helper.to_array(shipped), rtol=RTOL, atol=ATOL)


def without_final_softmax(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with its output the logits when it ends in a Softmax (a copy). The light
    models' weights are constants, so every class gets the same logit in exact arithmetic
    and large ones (SqueezeNet's reach 1e10, where float32 steps by 1024): which class
    rounds highest then decides the softmax, and another summation order (two cores)
    rightly gives another answer. The logits themselves must agree."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    last = out.graph.node[-1]
    if last.op_type != "Softmax" or last.output[0] != out.graph.output[0].name:
        return out
    out.graph.output[0].name = last.input[0]
    del out.graph.node[-1]
    return out


@pytest.mark.parametrize("name", MODELS)
def test_light_model_at_lnc2_matches_lnc1(name: str, tmp_path: Path) -> None:
    """Sharded over the two physical cores of a trn2 logical core, the same logits (or
    outputs, without a final softmax), to float32 rounding of their depth and scale."""
    path = tmp_path / f"{name}.onnx"
    onnx.save(without_final_softmax(onnx.load(LIGHT / f"light_{name}.onnx")), path)
    key, x = runner_input(onnx.load(path))
    outputs = []
    for target in ("trn1", "trn2"):
        neff = tmp_path / f"{target}.neff"
        compile_model(str(path), CompileOptions(target=target, output=str(neff)),
                      emit=lambda _line: None)
        model = LoadedModel(read_neff(neff))
        assert len(model.programs) == (2 if target == "trn2" else 1)
        outputs.append(list(model.execute({key: x}).values())[0])
    # the logits grow to 1e31 through layers of constant weights, each sum rounded in
    # float32 in another order on two cores: a few 1e-5 apart
    scale = float(np.max(np.abs(outputs[0])))
    np.testing.assert_allclose(outputs[1], outputs[0], rtol=1e-4, atol=1e-6 * scale + 1e-6)
