"""Helpers for the ONNX frontend tests: tiny models built with onnx.helper, run through the
frontend + IR interpreter (backend kernels) and compared with onnxruntime."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from nxcc.compiler.onnx import import_onnx
from nxcc.ir.core import Module
from nxcc.ir.verifier import verify_module

RTOL, ATOL = 1e-4, 1e-5


@dataclass
class Case:
    """One single-node model: `inputs` become graph inputs, `consts` initializers (in the
    node's input order given by `order`, '' for an omitted optional input)."""

    op: str
    inputs: dict[str, np.ndarray]
    attrs: dict[str, Any] = field(default_factory=dict)
    opset: int = 17
    consts: dict[str, np.ndarray] = field(default_factory=dict)
    order: list[str] | None = None
    outputs: int = 1
    id: str = ""
    reference: str = "onnxruntime"  # or "onnx" (the ONNX reference evaluator)

    def __str__(self) -> str:
        return self.id or f"{self.op}-{self.opset}"


def make_model(case: Case) -> onnx.ModelProto:
    order = case.order or [*case.inputs, *case.consts]
    outs = [f"out{i}" for i in range(case.outputs)]
    node = helper.make_node(case.op, order, outs, name=f"{case.op.lower()}_node", **case.attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for k, v in case.inputs.items()],
        [helper.make_empty_tensor_value_info(o) for o in outs],
        [numpy_helper.from_array(v, k) for k, v in case.consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset)])
    model.ir_version = min(model.ir_version, 10)
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    for out in model.graph.output:  # function ops (GroupNormalization) infer nothing
        if not out.type.HasField("tensor_type"):
            out.type.CopyFrom(model.graph.input[0].type)
    return model


def run_onnxruntime(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]
                    ) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, dict(feeds)), strict=True))


def run_reference(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]
                  ) -> dict[str, np.ndarray]:
    """The ONNX reference evaluator: the spec where onnxruntime deviates from it."""
    from onnx.reference import ReferenceEvaluator

    names = [o.name for o in model.graph.output]
    return dict(zip(names, ReferenceEvaluator(model).run(None, dict(feeds)), strict=True))


def _vectorized_context(module: Module) -> Any:
    """nxcc.ir.interpreter's IRContext, except that calling a scalar computation (a sort
    comparator, a scatter combiner) on whole arrays computes elementwise, as the kernel
    contract (backend/kernels/base.py) says `ctx.call` does."""
    from nxcc.ir.interpreter import IRContext, evaluate_op

    class VectorizedContext(IRContext):
        def call(self, function: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
            fn = self.module.functions[function]
            if all(np.shape(a) == p.type.shape for a, p in zip(args, fn.params, strict=True)):
                return super().call(function, args)
            env = {id(p): np.asarray(a) for p, a in zip(fn.params, args, strict=True)}
            for op in fn.body:
                ins = [env[id(v)] for v in op.operands]
                shape = np.broadcast_shapes(*(np.shape(a) for a in ins)) if ins else ()
                outs = [np.empty(shape, r.type.dtype.numpy) for r in op.results]
                ins = [np.broadcast_to(a, shape) for a in ins]
                from nxcc.ir.kernels import get_kernel

                get_kernel(op.opcode)(ins, outs, op.attrs, self)
                env.update({id(r): o for r, o in zip(op.results, outs, strict=True)})
            return [env[id(r)] for r in fn.results]

    del evaluate_op
    return VectorizedContext(module)


def run_module(module: Module, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The entry function evaluated op by op with the backend kernels."""
    fn = module.entry_function
    args = [np.asarray(feeds[p.name], p.type.dtype.numpy) for p in fn.params]
    results = _vectorized_context(module).call(fn.name, args)
    return dict(zip(fn.result_names, results, strict=True))


def compare(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray],
            input_shapes: Mapping[str, Sequence[int]] | None = None,
            rtol: float = RTOL, atol: float = ATOL, reference: str = "onnxruntime") -> Module:
    """Import `model`, verify it, and check it computes what onnxruntime (or the ONNX
    reference evaluator) does on `feeds`."""
    module = import_onnx(model, input_shapes)
    verify_module(module)
    run = run_onnxruntime if reference == "onnxruntime" else run_reference
    want = {k: np.asarray(v) for k, v in run(model, feeds).items()}
    got = run_module(module, feeds)
    assert list(got) == list(want)
    for name, ref in want.items():
        assert got[name].dtype == ref.dtype, (name, got[name].dtype, ref.dtype)
        assert got[name].shape == ref.shape, (name, got[name].shape, ref.shape)
        np.testing.assert_allclose(got[name], ref, rtol=rtol, atol=atol, err_msg=name)
    return module


class RandomInputs:
    """Inputs for test cases from one seeded generator; each test module makes its own, so a
    case's data does not depend on which other modules are collected."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def f32(self, *shape: int) -> np.ndarray:
        """Standard normal float32."""
        return self.rng.standard_normal(shape).astype(np.float32)

    def pos(self, *shape: int) -> np.ndarray:
        """Positive float32 in [0.5, 1.5)."""
        return (self.rng.random(shape) + 0.5).astype(np.float32)

    def f16(self, *shape: int) -> np.ndarray:
        """Standard normal float16."""
        return self.f32(*shape).astype(np.float16)


def i64(values: object) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def matches_onnxruntime(cases: Sequence[Case]) -> Callable[[Case], None]:
    """The test that each of `cases` computes what its reference (onnxruntime, or the ONNX
    reference evaluator) does; assign it to `test_matches_onnxruntime` in a test module."""

    @pytest.mark.parametrize("case", cases, ids=str)
    def test_matches_onnxruntime(case: Case) -> None:
        compare(make_model(case), case.inputs, reference=case.reference)

    return test_matches_onnxruntime


def without_constant_folding(cases: Sequence[Case]) -> Callable[..., None]:
    """The same test for those of `cases` with constant inputs, the importer's folding off:
    nodes whose inputs are all constants are folded, and their converters must work too.
    Assign it to `test_converters_without_constant_folding` in a test module."""

    @pytest.mark.parametrize("case", [c for c in cases if c.consts or not c.inputs], ids=str)
    def test_converters_without_constant_folding(case: Case, monkeypatch: pytest.MonkeyPatch
                                                 ) -> None:
        monkeypatch.setattr("nxcc.compiler.onnx.importer.fold_ops", lambda *args: {})
        compare(make_model(case), case.inputs, reference=case.reference)

    return test_converters_without_constant_folding
