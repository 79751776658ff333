"""Regenerate the small PyTorch-exported ONNX test models in this folder.

This script needs PyTorch (plus onnx, onnxruntime, numpy and onnxscript for the
dynamo exporter). It is NOT needed to run the test suite: the ``.onnx`` files it
writes are committed, and this script exists only so they can be regenerated.

Usage::

    /path/to/venv-with-torch/bin/python tests/e2e/models/make_models.py

It exports an MLP and a small CNN with both the TorchScript exporter
(``dynamo=False``, opsets 13 and 17) and the dynamo exporter (opset 18), plus an
MLP with a dynamic batch dimension, then checks every file with the ONNX checker
and compares onnxruntime against the PyTorch output.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

OUT_DIR = Path(__file__).resolve().parent
ATOL = 1e-5
MAX_BYTES = 200 * 1024


def build_mlp() -> nn.Module:
    """Linear(16, 32) -> GELU (exact, erf) -> Linear(32, 10) -> Softmax."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(16, 32),
        nn.GELU(approximate="none"),
        nn.Linear(32, 10),
        nn.Softmax(dim=-1),
    )
    return model.eval()


def build_cnn() -> nn.Module:
    """Conv/BN/ReLU/MaxPool/Conv/BN/ReLU/GlobalAvgPool/Flatten/Linear."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, stride=1, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 10),
    )
    # Non-trivial BatchNorm statistics and affine parameters so BN matters.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.3, 0.3)
    return model.eval()


@dataclass(frozen=True)
class Spec:
    """One ONNX file to produce."""

    filename: str
    build: Callable[[], nn.Module]
    input_shape: tuple[int, ...]
    opset: int
    dynamo: bool
    dynamic_batch: bool = False
    # TorchScript exporter only: TrainingMode.PRESERVE skips the eval-mode
    # Conv+BatchNorm fusion, so BatchNormalization nodes stay in the graph.
    keep_batchnorm: bool = False


SPECS: list[Spec] = [
    Spec("mlp_ts13.onnx", build_mlp, (4, 16), 13, dynamo=False),
    Spec("mlp_ts17.onnx", build_mlp, (4, 16), 17, dynamo=False),
    Spec("mlp_dyn18.onnx", build_mlp, (4, 16), 18, dynamo=True),
    Spec("cnn_ts13.onnx", build_cnn, (2, 3, 16, 16), 13, dynamo=False),
    Spec("cnn_ts17.onnx", build_cnn, (2, 3, 16, 16), 17, dynamo=False),
    Spec("cnn_dyn18.onnx", build_cnn, (2, 3, 16, 16), 18, dynamo=True),
    Spec("mlp_dynbatch_ts17.onnx", build_mlp, (4, 16), 17, dynamo=False, dynamic_batch=True),
    Spec("cnn_bn_ts17.onnx", build_cnn, (2, 3, 16, 16), 17, dynamo=False, keep_batchnorm=True),
]


def example_input(shape: tuple[int, ...]) -> torch.Tensor:
    gen = torch.Generator().manual_seed(1234)
    return torch.randn(*shape, generator=gen, dtype=torch.float32)


def export(spec: Spec, path: Path) -> None:
    model = spec.build()
    x = example_input(spec.input_shape)
    if spec.dynamo:
        program = torch.onnx.export(
            model,
            (x,),
            dynamo=True,
            opset_version=spec.opset,
            input_names=["x"],
            output_names=["y"],
            external_data=False,
        )
        assert program is not None
        program.save(str(path), external_data=False)
    else:
        dynamic_axes = {"x": {0: "batch"}, "y": {0: "batch"}} if spec.dynamic_batch else None
        training = (
            torch.onnx.TrainingMode.PRESERVE
            if spec.keep_batchnorm
            else torch.onnx.TrainingMode.EVAL
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model,
                (x,),
                str(path),
                dynamo=False,
                opset_version=spec.opset,
                input_names=["x"],
                output_names=["y"],
                dynamic_axes=dynamic_axes,
                training=training,
            )
    # Make sure weights are embedded in the .onnx file (no external data).
    proto = onnx.load(str(path), load_external_data=True)
    onnx.save(proto, str(path), save_as_external_data=False)
    stray = path.with_name(path.name + ".data")
    if stray.exists():
        stray.unlink()


def _dims(value_info: onnx.ValueInfoProto) -> list[int | str]:
    dims: list[int | str] = []
    for d in value_info.type.tensor_type.shape.dim:
        dims.append(d.dim_value if d.HasField("dim_value") else d.dim_param or "?")
    return dims


@dataclass
class Summary:
    filename: str
    opset: int
    op_types: list[str]
    inputs: list[tuple[str, list[int | str]]]
    outputs: list[tuple[str, list[int | str]]]
    size: int
    max_abs_err: float


def verify(spec: Spec, path: Path) -> Summary:
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    for init in proto.graph.initializer:
        assert init.data_location != onnx.TensorProto.EXTERNAL, f"{path.name}: external data"
    opset = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
    assert opset == spec.opset, f"{path.name}: opset {opset} != {spec.opset}"
    size = path.stat().st_size
    assert size < MAX_BYTES, f"{path.name}: {size} bytes"

    init_names = {i.name for i in proto.graph.initializer}
    inputs = [(v.name, _dims(v)) for v in proto.graph.input if v.name not in init_names]
    outputs = [(v.name, _dims(v)) for v in proto.graph.output]
    assert [n for n, _ in inputs] == ["x"], inputs
    assert [n for n, _ in outputs] == ["y"], outputs

    model = spec.build()
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    shapes = [spec.input_shape]
    if spec.dynamic_batch:
        assert inputs[0][1][0] == "batch" and outputs[0][1][0] == "batch"
        shapes += [(1, *spec.input_shape[1:]), (7, *spec.input_shape[1:])]
    max_err = 0.0
    rng = np.random.default_rng(0)
    for shape in shapes:
        x = rng.standard_normal(shape).astype(np.float32)
        (got,) = sess.run(["y"], {"x": x})
        with torch.no_grad():
            want = model(torch.from_numpy(x)).numpy()
        assert got.shape == want.shape, (got.shape, want.shape)
        np.testing.assert_allclose(got, want, atol=ATOL, rtol=0)
        max_err = max(max_err, float(np.max(np.abs(got - want))))

    op_types = sorted({n.op_type for n in proto.graph.node})
    if spec.keep_batchnorm:
        assert "BatchNormalization" in op_types, op_types
    return Summary(spec.filename, opset, op_types, inputs, outputs, size, max_err)


def _fmt_io(items: list[tuple[str, list[int | str]]]) -> str:
    return ", ".join(f"{name} {dims}" for name, dims in items)


def write_readme(summaries: list[Summary]) -> None:
    lines = [
        "# PyTorch-exported ONNX test models",
        "",
        "Small models exported from PyTorch 2.x, committed so the tests need no torch.",
        "`*_ts13`/`*_ts17` come from the TorchScript exporter (`dynamo=False`),",
        "`*_dyn18` from the dynamo exporter (`dynamo=True`, onnxscript optimizer on).",
        "`mlp_dynbatch_ts17` has a symbolic batch dimension (`batch`) to test `--input-shape`.",
        "Both exporters fold eval-mode BatchNorm into the preceding Conv; `cnn_bn_ts17` is",
        "exported with `training=TrainingMode.PRESERVE` so it keeps `BatchNormalization` nodes",
        "(`training_mode=0`, running stats as initializers).",
        "All weights are embedded (no external data). Seed: `torch.manual_seed(0)`.",
        "",
        "- MLP: Linear(16, 32) -> GELU (erf) -> Linear(32, 10) -> Softmax(dim=-1)",
        "- CNN: Conv2d(3, 8, 3, p=1) -> BatchNorm2d -> ReLU -> MaxPool2d(2) ->",
        "  Conv2d(8, 16, 3, p=1) -> BatchNorm2d -> ReLU -> AdaptiveAvgPool2d(1) -> Flatten ->",
        "  Linear(16, 10), eval mode, randomized BatchNorm running stats",
        "",
        "| file | opset | input | output | op types |",
        "| --- | --- | --- | --- | --- |",
    ]
    for s in summaries:
        lines.append(
            f"| `{s.filename}` | {s.opset} | {_fmt_io(s.inputs)} | {_fmt_io(s.outputs)} "
            f"| {', '.join(s.op_types)} |"
        )
    lines += [
        "",
        "Regenerate (needs torch, onnx, onnxruntime, onnxscript; run from the repo root):",
        "",
        "```",
        "/path/to/venv-with-torch/bin/python tests/e2e/models/make_models.py",
        "```",
        "",
        f"Every file is checked with `onnx.checker` and compared against PyTorch with "
        f"onnxruntime (atol {ATOL:g}).",
        "",
    ]
    (OUT_DIR / "README.md").write_text("\n".join(lines))


def main() -> None:
    summaries: list[Summary] = []
    for spec in SPECS:
        path = OUT_DIR / spec.filename
        export(spec, path)
    for spec in SPECS:
        path = OUT_DIR / spec.filename
        s = verify(spec, path)
        summaries.append(s)
        print(
            f"{s.filename}: opset {s.opset}, {s.size} bytes, max|err| {s.max_abs_err:.2e}\n"
            f"  inputs:  {_fmt_io(s.inputs)}\n"
            f"  outputs: {_fmt_io(s.outputs)}\n"
            f"  ops:     {s.op_types}"
        )
    write_readme(summaries)
    print(f"wrote {len(summaries)} models and README.md to {OUT_DIR}")


if __name__ == "__main__":
    main()
