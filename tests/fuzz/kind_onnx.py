"""ONNX inputs: seeds from examples/ and tests/e2e/models/, and small models with subgraphs,
constants and every element type (`onnx_seeds`); mutants change the model as a protobuf
message (through its JSON form), retarget its fields (element types, dims, names that make
cycles or dangle), change any tensor, type, attribute or node anywhere in it, subgraphs
included (`onnx_mutations`), or flip its bytes; each goes through `compile`."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from hypothesis import strategies as st

from tests.backend.neff.mutants import EXAMPLES, REPO
from tests.fuzz.harness import Kind
from tests.fuzz.mutations import BOUNDARY_INTS, mutate_bytes, mutate_json
from tests.fuzz.onnx_mutations import ELEM_TYPE, mutate_structured
from tests.fuzz.onnx_seeds import onnx_seeds

SEED_MODELS = (EXAMPLES / "mlp.onnx", EXAMPLES / "cnn.onnx",
               REPO / "tests/e2e/models/mlp_ts13.onnx", REPO / "tests/e2e/models/cnn_ts13.onnx",
               REPO / "tests/e2e/models/mlp_dyn18.onnx")


def seeds(work: Path) -> list[bytes]:
    return [p.read_bytes() for p in SEED_MODELS if p.exists()] + onnx_seeds()


def _targeted(model: onnx.ModelProto, data: st.DataObject) -> None:
    """One change aimed at what frontends trip on: an element type, a dim, a name."""
    g = model.graph
    what = data.draw(st.sampled_from(("dtype", "dim", "rename", "op", "attr")))
    if what == "dtype" and g.initializer:
        t = g.initializer[data.draw(st.integers(0, len(g.initializer) - 1))]
        t.data_type = data.draw(ELEM_TYPE)
    elif what == "dim":
        values = list(g.input) + list(g.output)
        dims = [d for v in values for d in v.type.tensor_type.shape.dim]
        dims += [t for t in g.initializer]
        if dims:
            target = dims[data.draw(st.integers(0, len(dims) - 1))]
            value = data.draw(st.sampled_from(BOUNDARY_INTS[:13] + (-5,)))
            if isinstance(target, onnx.TensorProto):
                if target.dims:
                    target.dims[0] = value
            else:
                target.dim_value = value
    elif what == "rename" and g.node:
        node = g.node[data.draw(st.integers(0, len(g.node) - 1))]
        names = [o for n in g.node for o in n.output] + ["nowhere", ""]
        if node.input:
            node.input[data.draw(st.integers(0, len(node.input) - 1))] = data.draw(
                st.sampled_from(names))
    elif what == "op" and g.node:
        node = g.node[data.draw(st.integers(0, len(g.node) - 1))]
        node.op_type = data.draw(st.sampled_from(("Relu", "MatMul", "Gemm", "Conv", "Add",
                                                  "Reshape", "Loop", "If", "Frob", "")))
    elif g.node:
        node = g.node[data.draw(st.integers(0, len(g.node) - 1))]
        if node.attribute:
            a = node.attribute[data.draw(st.integers(0, len(node.attribute) - 1))]
            a.i = data.draw(st.sampled_from(BOUNDARY_INTS[:13]))
            a.ints.extend(data.draw(st.lists(st.integers(-3, 1 << 20), max_size=3)))


def mutate(raw: bytes, data: st.DataObject) -> bytes:
    how = data.draw(st.sampled_from(("targeted", "structured", "structured", "json",
                                     "bytes")), label="how")
    if how == "bytes":
        return mutate_bytes(raw, data)
    model = onnx.ModelProto()
    try:
        model.ParseFromString(raw)
    except (DecodeError, ValueError, RuntimeError):
        return mutate_bytes(raw, data)
    if how in ("targeted", "structured"):
        try:
            (_targeted if how == "targeted" else mutate_structured)(model, data)
        except (ValueError, TypeError, IndexError):  # protobuf refused the value: keep it
            pass
        return model.SerializeToString()
    tree = json_format.MessageToDict(model.graph)
    try:
        mutated = mutate_json(tree, data)
        graph = json_format.ParseDict(json.loads(json.dumps(mutated)), onnx.GraphProto())
    except (json_format.ParseError, ValueError, TypeError, RecursionError, AttributeError):
        return mutate_bytes(raw, data)
    model.graph.CopyFrom(graph)
    return model.SerializeToString()


def commands(path: Path, work: Path) -> list[list[str]]:
    return [["compile", str(path), "--target", "trn1", "--output", str(work / "out.neff"),
             "--logfile", str(work / "log.txt")]]


KIND = Kind("onnx", ".onnx", seeds, mutate, commands)
