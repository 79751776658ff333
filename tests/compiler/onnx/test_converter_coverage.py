"""Every supported ONNX operator has a converter test: a case of a tests/compiler/onnx/test_*_ops.py
module or a passing case of onnx's node suite (tests/compiler/onnx/node_suite/expected_pass.txt)."""

from __future__ import annotations

from nxcc.compiler.onnx import SUPPORTED_OPS
from tests.compiler.onnx import (
    test_activation_ops,
    test_conv_pool_ops,
    test_elementwise_ops,
    test_gather_scatter_ops,
    test_indexing_ops,
    test_linalg_ops,
    test_norm_ops,
    test_reduce_ops,
    test_resize_ops,
    test_shape_ops,
)
from tests.compiler.onnx.node_suite import suite

CASE_MODULES = (test_activation_ops, test_conv_pool_ops, test_elementwise_ops,
                test_gather_scatter_ops, test_indexing_ops, test_linalg_ops, test_norm_ops,
                test_reduce_ops, test_resize_ops, test_shape_ops)


def test_every_converter_is_exercised() -> None:
    """Each supported operator has a case here or a passing case of onnx's node suite
    (tests/compiler/onnx/node_suite/expected_pass.txt), or (random operators) a statistical test in
    tests/ir/kernels/test_random.py."""
    from tests.ir.kernels.test_random import STATISTICALLY_TESTED

    tested = {c.op for m in CASE_MODULES for c in m.CASES} | set(STATISTICALLY_TESTED)
    models = suite.node_models()
    for name in suite.read_expected_pass():
        for node in models[name].graph.node:
            domain = "" if node.domain in ("", "ai.onnx") else f"{node.domain}."
            tested.add(domain + node.op_type)
    assert sorted(set(SUPPORTED_OPS) - tested) == []
