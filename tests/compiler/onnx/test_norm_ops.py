"""Normalization converters (compiler/onnx/norm.py): batch, layer, instance and group
normalization and LRN against onnxruntime, one node at a time, and LRN's even sizes against
the spec."""

from __future__ import annotations

import numpy as np

from nxcc.compiler.onnx import import_onnx
from tests.compiler.onnx.helpers import (
    Case,
    RandomInputs,
    make_model,
    matches_onnxruntime,
    run_module,
    without_constant_folding,
)

data = RandomInputs()
f32, pos = data.f32, data.pos
IMG = {"x": f32(2, 4, 9, 8)}

CASES = [
    Case("BatchNormalization", IMG, {"epsilon": 1e-3},
         consts={"s": f32(4), "b": f32(4), "m": f32(4), "v": pos(4)}, opset=15),
    Case("BatchNormalization", IMG, consts={"s": f32(4), "b": f32(4), "m": f32(4),
                                            "v": pos(4)}, opset=9, id="BatchNorm-opset9"),
    Case("BatchNormalization", IMG, consts={"s": f32(4), "b": f32(4), "m": f32(4),
                                            "v": pos(4)}, opset=7),
    Case("LayerNormalization", {"x": f32(2, 3, 8)}, consts={"s": f32(8), "b": f32(8)}),
    Case("LayerNormalization", {"x": f32(2, 3, 8)}, {"axis": 1},
         consts={"s": f32(3, 8)}, outputs=3, id="LayerNorm-axis1-stats"),
    Case("InstanceNormalization", IMG, consts={"s": f32(4), "b": f32(4)}),
    Case("GroupNormalization", IMG, {"num_groups": 2}, consts={"s": f32(4), "b": f32(4)},
         opset=21),
    Case("LRN", IMG, {"size": 3, "alpha": 0.01, "beta": 0.5, "bias": 2.0}),
]

test_matches_onnxruntime = matches_onnxruntime(CASES)
test_converters_without_constant_folding = without_constant_folding(CASES)


def test_lrn_even_size_follows_the_spec() -> None:
    """onnxruntime refuses an even size and the ONNX reference is wrong there: use the
    spec's formula (window [c - floor((size-1)/2), c + ceil((size-1)/2)])."""
    x = IMG["x"]
    case = Case("LRN", {"x": x}, {"size": 2, "alpha": 0.1, "beta": 0.6, "bias": 1.5})
    got = run_module(import_onnx(make_model(case)), case.inputs)["out0"]
    sq = np.pad(x.astype(np.float64) ** 2, ((0, 0), (0, 1), (0, 0), (0, 0)))
    window = sq[:, :-1] + sq[:, 1:]
    want = x / (1.5 + 0.1 / 2 * window) ** 0.6
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
