"""Matrix converters (compiler/onnx/linalg.py, einsum.py): MatMul, Gemm and Einsum against
onnxruntime, one node at a time."""

from __future__ import annotations

from tests.compiler.onnx.helpers import Case, RandomInputs, matches_onnxruntime

data = RandomInputs()
f32 = data.f32

CASES = [
    Case("MatMul", {"a": f32(3, 4), "b": f32(4, 5)}),
    Case("MatMul", {"a": f32(2, 3, 4), "b": f32(4, 5)}, id="MatMul-batch-weights"),
    Case("MatMul", {"a": f32(2, 1, 3, 4), "b": f32(5, 4, 2)}, id="MatMul-broadcast"),
    Case("MatMul", {"a": f32(4), "b": f32(2, 4, 5)}, id="MatMul-1d-lhs"),
    Case("MatMul", {"a": f32(2, 3, 4), "b": f32(4)}, id="MatMul-1d-rhs"),
    Case("MatMul", {"a": f32(4), "b": f32(4)}, id="MatMul-1d-both"),
    Case("Gemm", {"a": f32(3, 4), "b": f32(4, 5), "c": f32(5)}),
    Case("Gemm", {"a": f32(4, 3), "b": f32(5, 4), "c": f32(3, 1)},
         {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}, id="Gemm-trans"),
    Case("Gemm", {"a": f32(3, 4), "b": f32(4, 5)}, opset=13, id="Gemm-no-C"),
    Case("Gemm", {"a": f32(3, 4), "b": f32(4, 5), "c": f32(1)}, opset=9, id="Gemm-opset9"),
    Case("Gemm", {"a": f32(3, 4), "b": f32(4, 5), "c": f32(3, 5)}, opset=7),
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

test_matches_onnxruntime = matches_onnxruntime(CASES)
