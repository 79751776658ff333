"""The ONNX node conformance suite against nxcc: which cases exist, which are skipped and why,
and how one case runs.

Cases come from `onnx.backend.test.BackendTest(backend.onnx_backend, ...)` (onnx builds its
1,884 node cases in memory); a case runs exactly as onnx's runner runs it (`prepare`, `run`,
outputs compared with the case's rtol/atol, 1e-3/1e-7 unless the case says otherwise) on the
CPU device. `SKIP_GROUPS` is the one place that decides what is skipped, each group with its
reason; every other case counts, and a failure is a failure.
"""

from __future__ import annotations

import functools
import unittest
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import onnx

HERE = Path(__file__).resolve().parent
EXPECTED_PASS = HERE / "expected_pass.txt"
SUITE_SIZE = 1884  # node cases in onnx 1.23

# -- what is skipped, and why (the only place) -------------------------------------------

TRAINING_OPS = frozenset({"Gradient"})
SEQUENCE_OPS = frozenset({
    "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert",
    "SequenceLength", "SequenceMap", "SplitToSequence", "ConcatFromSequence", "Optional",
    "OptionalGetElement", "OptionalHasElement",
})

SKIP_GROUPS: dict[str, str] = {
    "training": "the Gradient operator (gradients of a graph inside the graph): nxcc's "
                "training steps differentiate with --training instead",
    "string": "string tensors: the IR and the NEFF carry numeric tensors only",
    "sequence": "sequence, optional or map values: the IR's values are tensors only",
}


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """`graph` and every subgraph (If/Loop/Scan bodies), depth first."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from _graphs(g)


def _has_string(t: onnx.TypeProto) -> bool:
    kind = t.WhichOneof("value")
    if kind == "tensor_type":
        return t.tensor_type.elem_type == onnx.TensorProto.STRING
    if kind in ("sequence_type", "optional_type"):
        inner = getattr(t, kind).elem_type
        return _has_string(inner)
    return False


def skip_group(model: onnx.ModelProto) -> str | None:
    """The `SKIP_GROUPS` key a case's model falls under, or None when it must run."""
    ops: set[str] = set()
    types: list[onnx.TypeProto] = []
    strings_in_attrs = False
    for g in _graphs(model.graph):
        for node in g.node:
            ops.add(node.op_type)
            strings_in_attrs |= any(a.type == onnx.AttributeProto.TENSOR
                                    and a.t.data_type == onnx.TensorProto.STRING
                                    for a in node.attribute)
        types += [v.type for v in (*g.input, *g.output, *g.value_info)]
    if ops & TRAINING_OPS:
        return "training"
    if any(_has_string(t) for t in types) or strings_in_attrs:
        return "string"
    if ops & SEQUENCE_OPS or any(t.WhichOneof("value") in ("sequence_type", "optional_type",
                                                            "map_type") for t in types):
        return "sequence"
    return None


# -- the cases ----------------------------------------------------------------------------

@functools.cache
def node_test_class(module_name: str = __name__) -> type[unittest.TestCase]:
    """onnx's generated TestCase class of node cases, bound to backend.onnx_backend."""
    import onnx.backend.test

    import nxcc.driver.onnx_backend as nxcc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return onnx.backend.test.BackendTest(nxcc, module_name).test_cases[
            "OnnxBackendNodeModelTest"]


@functools.cache
def node_models() -> dict[str, onnx.ModelProto]:
    """Case name (``test_abs``...) -> its model, for every node case."""
    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {t.name: t.model for t in load_model_tests(kind="node")}


def skipped_cases() -> dict[str, str]:
    """Case name -> its skip group, for the cases `SKIP_GROUPS` excludes."""
    out = {}
    for name, model in node_models().items():
        group = skip_group(model)
        if group is not None:
            out[name] = group
    return out


def case_method(name: str) -> Callable[[], None]:
    """A zero-argument callable running case `name` on the CPU device (raises on failure)."""
    cls = node_test_class()
    method = f"{name}_cpu"
    return getattr(cls(method), method)


def case_op(name: str) -> str:
    """The operator case `name` tests: its node's op type ("A+B" for a graph of several
    ops); for a function-expanded case (``..._expanded``), its unexpanded twin's op followed
    by `` (expanded)``."""
    models = node_models()
    base, sep, _rest = name.partition("_expanded")
    model = models.get(base, models[name]) if sep else models[name]
    ops = sorted({n.op_type for n in model.graph.node})
    op = "+".join(ops) if ops else "?"
    return f"{op} (expanded)" if sep else op


def read_expected_pass(path: Path = EXPECTED_PASS) -> list[str]:
    """The committed list of cases that pass (one name a line, '#' comments)."""
    if not path.exists():
        return []
    lines = (ln.split("#", 1)[0].strip() for ln in path.read_text().splitlines())
    return [ln for ln in lines if ln]
