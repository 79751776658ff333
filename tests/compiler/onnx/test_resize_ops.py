"""Resize and Upsample converters (compiler/onnx/resize.py): nearest, linear and cubic, every
coordinate transformation, sizes or scales, antialiasing, against onnxruntime."""

from __future__ import annotations

import numpy as np

from tests.compiler.onnx.helpers import (
    Case,
    RandomInputs,
    i64,
    matches_onnxruntime,
    without_constant_folding,
)

data = RandomInputs()
SMALL = {"x": data.f32(1, 2, 5, 4)}


def scales(*s: float) -> dict[str, np.ndarray]:
    return {"roi": np.zeros(0, np.float32), "s": np.array(s, np.float32)}


def sizes(*s: int) -> dict[str, np.ndarray]:
    return {"roi": np.zeros(0, np.float32), "s": np.zeros(0, np.float32), "z": i64(s)}


CASES = [
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

test_matches_onnxruntime = matches_onnxruntime(CASES)
test_converters_without_constant_folding = without_constant_folding(CASES)
