"""The less common ONNX converters (Resize, gather/scatter, TopK, Einsum...) against
onnxruntime, and a check that every supported operator has a test case."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.compiler.onnx import SUPPORTED_OPS, import_onnx
from tests.onnx.helpers import Case, compare, make_model, run_module
from tests.onnx.test_ops import ALL as CORE
from tests.onnx.test_ops import IMG, X, f32, i64

SMALL = {"x": f32(1, 2, 5, 4)}


def scales(*s: float) -> dict[str, np.ndarray]:
    return {"roi": np.zeros(0, np.float32), "s": np.array(s, np.float32)}


def sizes(*s: int) -> dict[str, np.ndarray]:
    return {"roi": np.zeros(0, np.float32), "s": np.zeros(0, np.float32), "z": i64(s)}


RESIZE = [
    Case("Upsample", SMALL, {"scales": [1.0, 1.0, 2.0, 3.0]}, opset=7),
    Case("Upsample", SMALL, {"mode": "linear"}, consts={"s": np.array([1, 1, 2, 1.5],
                                                                       np.float32)},
         opset=9, id="Upsample-linear"),
    Case("Resize", SMALL, consts={"s": np.array([1, 1, 2, 0.5], np.float32)}, opset=10),
    Case("Resize", SMALL, {"mode": "linear"}, consts={"s": np.array([1, 1, 1.5, 0.6],
                                                                     np.float32)},
         opset=10, id="Resize-10-linear"),
    Case("Resize", SMALL, consts=scales(1, 1, 2, 2), opset=11, id="Resize-nearest"),
    Case("Resize", SMALL, {"nearest_mode": "floor", "coordinate_transformation_mode":
                           "asymmetric"}, consts=scales(1, 1, 1.7, 0.6), opset=13,
         id="Resize-nearest-floor"),
    Case("Resize", SMALL, {"nearest_mode": "round_prefer_ceil",
                           "coordinate_transformation_mode": "align_corners"},
         consts=sizes(1, 2, 8, 7), opset=13, id="Resize-nearest-sizes"),
    Case("Resize", SMALL, {"mode": "linear"}, consts=scales(1, 1, 2, 2), opset=13,
         id="Resize-linear"),
    Case("Resize", SMALL, {"mode": "linear", "coordinate_transformation_mode":
                           "pytorch_half_pixel"}, consts=sizes(1, 2, 3, 1), opset=13,
         id="Resize-linear-pytorch"),
    Case("Resize", SMALL, {"mode": "linear", "coordinate_transformation_mode":
                           "align_corners"}, consts=sizes(1, 2, 9, 7), opset=13,
         id="Resize-linear-align"),
    Case("Resize", SMALL, {"mode": "cubic"}, consts=scales(1, 1, 2, 1.5), opset=13,
         id="Resize-cubic"),
    Case("Resize", SMALL, {"mode": "cubic", "exclude_outside": 1, "cubic_coeff_a": -0.5,
                           "coordinate_transformation_mode": "asymmetric"},
         consts=scales(1, 1, 0.8, 2.5), opset=13, id="Resize-cubic-exclude"),
    Case("Resize", SMALL, {"mode": "linear", "antialias": 1}, consts=scales(1, 1, 0.6, 0.5),
         opset=18, id="Resize-linear-antialias"),
    Case("Resize", SMALL, {"mode": "cubic", "antialias": 1}, consts=scales(1, 1, 0.6, 0.5),
         opset=18, id="Resize-cubic-antialias"),
    Case("Resize", SMALL, {"axes": [3, 2], "keep_aspect_ratio_policy": "not_larger"},
         consts={"roi": np.zeros(0, np.float32), "s": np.zeros(0, np.float32),
                 "z": i64([7, 9])}, opset=18, id="Resize-axes-aspect"),
    Case("Resize", SMALL, {"mode": "linear", "coordinate_transformation_mode":
                           "half_pixel_symmetric"}, consts=sizes(1, 2, 7, 3), opset=19,
         id="Resize-half-pixel-symmetric"),
]

MORE = [
    Case("GatherND", {"x": f32(3, 4, 5), "i": np.array([[0, -1], [2, 1]], np.int64)}),
    Case("GatherND", {"x": f32(3, 4, 5), "i": np.array([[[1], [3]], [[0], [2]], [[3], [3]]],
                                                       np.int64)},
         {"batch_dims": 1}, id="GatherND-batch"),
    Case("ScatterND", {"x": f32(4, 3), "u": f32(2, 3)}, consts={"i": i64([[3], [-4]])},
         order=["x", "i", "u"]),
    Case("ScatterND", {"x": f32(4, 3), "i": np.array([[1, 2], [1, 2]], np.int64),
                       "u": f32(2)}, {"reduction": "add"}, opset=16, id="ScatterND-add"),
    Case("ScatterElements", {"x": f32(3, 4), "i": np.array([[2, 0, 1, 2]], np.int64),
                             "u": f32(1, 4)}, {"axis": 0}),
    Case("Scatter", {"x": f32(3, 4), "i": np.array([[2, 0, 1, 2]], np.int64),
                     "u": f32(1, 4)}, opset=10),
    Case("ScatterElements", {"x": f32(3, 4), "i": np.array([[1, 1], [-1, 0]], np.int64),
                             "u": f32(2, 2)}, {"axis": 1, "reduction": "max"}, opset=18,
         id="ScatterElements-max"),
    Case("OneHot", {"i": np.array([[1, -1], [0, 2]], np.int64)},
         consts={"d": i64(3), "v": np.array([-1, 5], np.float32)}),
    Case("OneHot", {"i": np.array([1, 0], np.float32)}, {"axis": 0},
         consts={"d": np.array([4], np.float32), "v": np.array([0, 1], np.float32)},
         id="OneHot-axis0"),
    Case("TopK", {"x": np.array([[1, 3, 3, 2], [0, 5, -1, 5]], np.float32)},
         consts={"k": i64([3])}, outputs=2, opset=11),
    Case("TopK", X, {"axis": 1, "largest": 0}, consts={"k": i64([2])}, outputs=2, opset=11,
         id="TopK-smallest"),
    Case("TopK", X, {"k": 2}, outputs=2, opset=9, id="TopK-attr"),
    Case("DepthToSpace", {"x": f32(2, 8, 3, 2)}, {"blocksize": 2}),
    Case("DepthToSpace", {"x": f32(2, 8, 3, 2)}, {"blocksize": 2, "mode": "CRD"},
         id="DepthToSpace-CRD"),
    Case("SpaceToDepth", {"x": f32(2, 2, 4, 6)}, {"blocksize": 2}),
    Case("LRN", IMG, {"size": 3, "alpha": 0.01, "beta": 0.5, "bias": 2.0}),
    Case("Einsum", {"a": f32(2, 3, 4), "b": f32(2, 4, 5)}, {"equation": "bij,bjk->bik"},
         opset=12),
    Case("Einsum", {"a": f32(3, 4)}, {"equation": "ij->ji"}, opset=12, id="Einsum-transpose"),
    Case("Einsum", {"a": f32(3, 4)}, {"equation": "ij"}, opset=12, id="Einsum-implicit"),
    Case("Einsum", {"a": f32(3, 4), "b": f32(4)}, {"equation": "ij,j"}, opset=12,
         id="Einsum-implicit-contract"),
    Case("Einsum", {"a": f32(2, 3, 4), "b": f32(4, 5), "c": f32(5)},
         {"equation": "...j,jk,k->..."}, opset=12, id="Einsum-three"),
    Case("Einsum", {"a": f32(2, 1, 3, 4), "b": f32(1, 5, 4, 6)},
         {"equation": "...ij,...jk->...ik"}, opset=12, id="Einsum-ellipsis-broadcast"),
    Case("Einsum", {"a": f32(3, 4), "b": f32(5, 6)}, {"equation": "ij,kl->ilkj"}, opset=12,
         id="Einsum-outer"),
    Case("Einsum", {"a": f32(3, 4), "b": f32(3, 4)}, {"equation": "ij,ij->"}, opset=12,
         id="Einsum-dot"),
]

ALL = MORE + RESIZE


@pytest.mark.parametrize("case", ALL, ids=str)
def test_matches_onnxruntime(case: Case) -> None:
    compare(make_model(case), case.inputs, reference=case.reference)


@pytest.mark.parametrize("case", [c for c in ALL if c.consts or not c.inputs], ids=str)
def test_converters_without_constant_folding(case: Case, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    monkeypatch.setattr("nxcc.compiler.onnx.importer.fold_ops", lambda *args: {})
    compare(make_model(case), case.inputs, reference=case.reference)


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


def test_every_converter_is_exercised() -> None:
    """Each supported operator has a case here or a passing case of onnx's node suite
    (tests/onnx/node_suite/expected_pass.txt), or (random operators) a statistical test in
    tests/training/test_random.py."""
    from tests.onnx.node_suite import suite
    from tests.training.test_random import STATISTICALLY_TESTED

    tested = {c.op for c in CORE + ALL} | set(STATISTICALLY_TESTED)
    models = suite.node_models()
    for name in suite.read_expected_pass():
        for node in models[name].graph.node:
            domain = "" if node.domain in ("", "ai.onnx") else f"{node.domain}."
            tested.add(domain + node.op_type)
    assert sorted(set(SUPPORTED_OPS) - tested) == []
