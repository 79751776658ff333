"""convolution against a naive reference written from the StableHLO spec, and onnxruntime."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from nxcc.ir import DType
from tests.ir.kernels.fake_ctx import run1

RNG = np.random.default_rng(4)


def _out_size(n, k, stride, lo, hi, ldil, rdil) -> int:
    base = (n - 1) * ldil + 1 if n else 0
    span = (k - 1) * rdil + 1
    padded = base + lo + hi
    return 0 if padded < span else (padded - span) // stride + 1


def ref_conv(x, w, strides, padding, ldil, rdil, groups=1, batch_groups=1):
    """Canonical x (N, C, *S), w (O, I, *K) -> (N / batch_groups, O, *P)."""
    if batch_groups > 1:
        xs = np.split(x, batch_groups, axis=0)
        ws = np.split(w, batch_groups, axis=0)
        return np.concatenate([ref_conv(a, b, strides, padding, ldil, rdil, groups)
                               for a, b in zip(xs, ws, strict=True)], axis=1)
    if groups > 1:
        xs = np.split(x, groups, axis=1)
        ws = np.split(w, groups, axis=0)
        return np.concatenate([ref_conv(a, b, strides, padding, ldil, rdil)
                               for a, b in zip(xs, ws, strict=True)], axis=1)
    spatial = x.shape[2:]
    ksize = w.shape[2:]
    out_sp = [_out_size(n, k, s, lo, hi, ld, rd) for n, k, s, (lo, hi), ld, rd in
              zip(spatial, ksize, strides, padding, ldil, rdil, strict=True)]
    out = np.zeros((x.shape[0], w.shape[0], *out_sp), np.float64)
    for p in itertools.product(*(range(n) for n in out_sp)):
        for k in itertools.product(*(range(n) for n in ksize)):
            src = []
            for d in range(len(spatial)):
                pos = p[d] * strides[d] + k[d] * rdil[d] - padding[d][0]
                if pos < 0 or pos % ldil[d] or pos // ldil[d] >= spatial[d]:
                    break
                src.append(pos // ldil[d])
            else:
                patch = x[(slice(None), slice(None), *src)]  # (N, C)
                out[(slice(None), slice(None), *p)] += patch @ w[(slice(None), slice(None),
                                                                  *k)].T
    return out


def _attrs(n: int, strides, padding, ldil, rdil, groups=1, batch_groups=1) -> dict:
    return {
        "window_strides": strides, "padding": padding, "lhs_dilation": ldil,
        "rhs_dilation": rdil, "feature_group_count": groups,
        "batch_group_count": batch_groups,
        "input_batch_dim": 0, "input_feature_dim": 1, "input_spatial_dims": tuple(range(2, n)),
        "kernel_output_feature_dim": 0, "kernel_input_feature_dim": 1,
        "kernel_spatial_dims": tuple(range(2, n)),
        "output_batch_dim": 0, "output_feature_dim": 1, "output_spatial_dims": tuple(range(2, n)),
    }


CASES = [
    # x shape, w shape, strides, padding, lhs_dilation, rhs_dilation, groups, batch_groups
    ((2, 3, 7, 6), (4, 3, 3, 2), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), 1, 1),
    ((2, 3, 7, 6), (4, 3, 3, 3), (2, 1), ((1, 1), (2, 0)), (1, 1), (1, 1), 1, 1),
    ((1, 2, 8, 9), (3, 2, 2, 3), (1, 2), ((-1, 2), (1, -2)), (1, 1), (2, 1), 1, 1),
    ((2, 4, 5, 5), (6, 2, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 2, 1),
    ((1, 6, 6, 5), (6, 1, 3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), (2, 1), 6, 1),
    ((2, 3, 6, 6), (6, 1, 3, 3), (1, 2), ((0, 1), (2, 2)), (1, 1), (1, 2), 3, 1),
    ((2, 3, 4, 5), (2, 3, 3, 2), (1, 1), ((2, 2), (1, 1)), (2, 3), (1, 1), 1, 1),
    ((4, 3, 5, 4), (6, 3, 2, 2), (1, 1), ((0, 1), (1, 0)), (1, 1), (1, 2), 1, 2),
    ((3, 2, 9), (4, 2, 4), (3,), ((2, 1),), (1,), (2,), 1, 1),
    ((1, 2, 3, 4, 3), (2, 2, 2, 2, 2), (1, 2, 1), ((0, 0), (1, 0), (0, 1)), (1, 1, 1),
     (1, 1, 1), 1, 1),
]


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_against_naive(case) -> None:
    xs, ws, strides, padding, ldil, rdil, groups, bgroups = case
    x = RNG.normal(size=xs)
    w = RNG.normal(size=ws)
    got = run1("convolution", [x, w],
               _attrs(len(xs), strides, padding, ldil, rdil, groups, bgroups))
    want = ref_conv(x, w, strides, padding, ldil, rdil, groups, bgroups)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_nhwc_hwio_layout() -> None:
    x = RNG.normal(size=(2, 3, 6, 5)).astype(np.float32)  # canonical N C H W
    w = RNG.normal(size=(4, 3, 3, 2)).astype(np.float32)  # O I KH KW
    attrs = {
        "window_strides": (1, 2), "padding": ((1, 1), (0, 1)), "lhs_dilation": (1, 1),
        "rhs_dilation": (1, 1),
        "input_batch_dim": 0, "input_feature_dim": 3, "input_spatial_dims": (1, 2),
        "kernel_input_feature_dim": 2, "kernel_output_feature_dim": 3,
        "kernel_spatial_dims": (0, 1),
        "output_batch_dim": 0, "output_feature_dim": 3, "output_spatial_dims": (1, 2),
    }
    got = run1("convolution", [x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0)], attrs)
    want = ref_conv(x.astype(np.float64), w.astype(np.float64), (1, 2), ((1, 1), (0, 1)),
                    (1, 1), (1, 1))
    np.testing.assert_allclose(got.transpose(0, 3, 1, 2), want, rtol=1e-4, atol=1e-4)


def test_integer_convolution_exact() -> None:
    x = RNG.integers(-100, 100, (1, 2, 5, 5)).astype(np.int8)
    w = RNG.integers(-100, 100, (3, 2, 3, 3)).astype(np.int8)
    attrs = _attrs(4, (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1))
    got = run1("convolution", [x, w], {**attrs, "result_dtype": DType.S32})
    want = ref_conv(x.astype(np.float64), w.astype(np.float64), (1, 1), ((1, 1), (1, 1)),
                    (1, 1), (1, 1))
    np.testing.assert_array_equal(got, want.astype(np.int32))


def test_against_onnxruntime() -> None:
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    node = helper.make_node("Conv", ["x", "w"], ["y"], strides=[2, 1], pads=[1, 0, 2, 1],
                            dilations=[1, 2], group=2)
    graph = helper.make_graph(
        [node], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 9, 8]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [6, 2, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = RNG.normal(size=(2, 4, 9, 8)).astype(np.float32)
    w = RNG.normal(size=(6, 2, 3, 3)).astype(np.float32)
    (want,) = sess.run(None, {"x": x, "w": w})
    got = run1("convolution", [x, w], _attrs(4, (2, 1), ((1, 2), (0, 1)), (1, 1), (1, 2), 2))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
