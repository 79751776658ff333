"""Structured ONNX mutations that reach every part of a model, subgraphs included: each
tensor (initializers, sparse ones, attribute tensors) by element type, data, dims and
external-data references; each declared type (graph inputs, outputs, value_info) by element
type, kind and shape; each attribute by its declared type, name and value; nodes by domain,
inputs, outputs and order; the model by opset and IR version. Every choice is drawn from
hypothesis, so a failing mutant is reproducible from its seed and kept as bytes."""

from __future__ import annotations

from collections.abc import Iterator

import onnx
from hypothesis import strategies as st

from tests.fuzz.mutations import BOUNDARY_INTS

#: Element type numbers: every TensorProto.DataType and some that are none.
ELEM_TYPES = (0, *range(1, 27), 27, 40, 100, 1 << 20)
#: The ones readers trip on most: UNDEFINED, STRING, BFLOAT16, INT4, FLOAT4E2M1, COMPLEX64,
#: and numbers ONNX does not define.
HAZARD_TYPES = (0, 8, 16, 22, 23, 14, 40, 1 << 20)
ELEM_TYPE = st.one_of(st.sampled_from(HAZARD_TYPES), st.sampled_from(ELEM_TYPES))
HOSTILE_LOCATIONS = ("nowhere.bin", "../outside.bin", "/dev/zero", "/dev/urandom", "",
                     "sub/../../x.bin", "/etc/passwd")


def graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """`graph` and every subgraph inside it (If branches, Loop and Scan bodies), depth first."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("g"):
                yield from graphs(attr.g)
            for sub in attr.graphs:
                yield from graphs(sub)


def tensors(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    out: list[onnx.TensorProto] = []
    for g in graphs(model.graph):
        out.extend(g.initializer)
        for sparse in g.sparse_initializer:
            out.extend((sparse.values, sparse.indices))
        for node in g.node:
            for attr in node.attribute:
                if attr.HasField("t"):
                    out.append(attr.t)
                out.extend(attr.tensors)
                if attr.HasField("sparse_tensor"):
                    out.extend((attr.sparse_tensor.values, attr.sparse_tensor.indices))
    return out


def value_infos(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    return [v for g in graphs(model.graph) for v in (*g.input, *g.output, *g.value_info)]


def nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    return [n for g in graphs(model.graph) for n in g.node]


def attributes(model: onnx.ModelProto) -> list[onnx.AttributeProto]:
    return [a for n in nodes(model) for a in n.attribute]


def _pick(items: list, data: st.DataObject):  # noqa: ANN202 (any proto)
    return items[data.draw(st.integers(0, len(items) - 1))] if items else None


def mutate_tensor(model: onnx.ModelProto, data: st.DataObject) -> None:
    t = _pick(tensors(model), data)
    if t is None:
        return
    what = data.draw(st.sampled_from(("dtype", "dtype", "raw", "dims", "typed", "external")))
    if what == "dtype":
        t.data_type = data.draw(ELEM_TYPE)
    elif what == "raw":
        raw = t.raw_data
        t.raw_data = data.draw(st.sampled_from((b"", raw[: len(raw) // 2], raw + b"\x00" * 3,
                                                raw * 2)))
    elif what == "dims":
        if t.dims and data.draw(st.booleans()):
            t.dims[data.draw(st.integers(0, len(t.dims) - 1))] = data.draw(
                st.sampled_from(BOUNDARY_INTS[:13] + (-5,)))
        else:
            t.dims.append(data.draw(st.sampled_from((0, 1, 2, 1 << 40))))
    elif what == "typed":  # data in a field that does not match the element type
        t.ClearField("raw_data")
        field = data.draw(st.sampled_from(("float_data", "int32_data", "int64_data",
                                           "double_data", "uint64_data", "string_data")))
        values = {"float_data": [1.5, float("nan")], "double_data": [2.5],
                  "string_data": [b"abc"]}.get(field, [7, -1])
        getattr(t, field).extend(values)
    else:
        t.data_location = onnx.TensorProto.EXTERNAL
        del t.external_data[:]
        for key, value in (("location", data.draw(st.sampled_from(HOSTILE_LOCATIONS))),
                           ("offset", str(data.draw(st.sampled_from((0, -1, 1 << 62))))),
                           ("length", str(data.draw(st.sampled_from((0, 4, 1 << 62)))))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value


def mutate_type(model: onnx.ModelProto, data: st.DataObject) -> None:
    v = _pick(value_infos(model), data)
    if v is None:
        return
    what = data.draw(st.sampled_from(("elem", "elem", "clear", "sequence", "dim", "rank")))
    tt = v.type.tensor_type
    if what == "elem":
        tt.elem_type = data.draw(ELEM_TYPE)
    elif what == "clear":
        v.ClearField("type")
    elif what == "sequence":
        elem = v.type.tensor_type.elem_type
        v.type.sequence_type.elem_type.tensor_type.elem_type = elem or 1
    elif what == "dim" and tt.shape.dim:
        d = tt.shape.dim[data.draw(st.integers(0, len(tt.shape.dim) - 1))]
        if data.draw(st.booleans()):
            d.dim_param = data.draw(st.sampled_from(("N", "", "batch size", "0")))
        else:
            d.dim_value = data.draw(st.sampled_from(BOUNDARY_INTS[:13] + (-5,)))
    else:
        for _ in range(data.draw(st.sampled_from((1, 20)))):
            tt.shape.dim.add().dim_value = 1


def mutate_attribute(model: onnx.ModelProto, data: st.DataObject) -> None:
    a = _pick(attributes(model), data)
    if a is None:
        return
    what = data.draw(st.sampled_from(("kind", "clear", "name", "ints", "ref")))
    if what == "kind":  # the declared type says another field than the one set
        a.type = data.draw(st.integers(0, 14))
    elif what == "clear":
        for field in ("f", "i", "s", "t", "g", "floats", "ints", "strings", "tensors",
                      "graphs"):
            a.ClearField(field)
    elif what == "name":
        a.name = data.draw(st.sampled_from(("", "axis", "to", "value", "body", "then_branch",
                                            "perm", "x" * 300)))
    elif what == "ints":
        a.ClearField("ints")
        a.ints.extend(data.draw(st.lists(st.sampled_from(BOUNDARY_INTS[:13] + (-5,)),
                                         max_size=5)))
        a.i = data.draw(st.sampled_from(BOUNDARY_INTS[:13]))
    else:
        a.ref_attr_name = "outer"


def mutate_node(model: onnx.ModelProto, data: st.DataObject) -> None:
    ns = nodes(model)
    n = _pick(ns, data)
    if n is None:
        return
    names = [o for m in ns for o in m.output] + [i for m in ns for i in m.input] + ["", "zz"]
    what = data.draw(st.sampled_from(("domain", "input", "output", "extra", "drop", "order")))
    if what == "domain":
        n.domain = data.draw(st.sampled_from(("ai.onnx.ml", "com.microsoft", "x", "ai.onnx")))
    elif what == "input" and n.input:
        n.input[data.draw(st.integers(0, len(n.input) - 1))] = data.draw(st.sampled_from(names))
    elif what == "output" and n.output:
        n.output[data.draw(st.integers(0, len(n.output) - 1))] = data.draw(
            st.sampled_from(names))
    elif what == "extra":
        n.input.append(data.draw(st.sampled_from(names)))
    elif what == "drop" and n.input:
        del n.input[-1]
    else:
        g = _pick(list(graphs(model.graph)), data)
        order = list(g.node)
        del g.node[:]
        g.node.extend(reversed(order))


def mutate_model(model: onnx.ModelProto, data: st.DataObject) -> None:
    what = data.draw(st.sampled_from(("opset", "ir", "domain")))
    if what == "opset" and model.opset_import:
        model.opset_import[0].version = data.draw(st.sampled_from((0, 1, 6, 11, 25, 1000, -1)))
    elif what == "ir":
        model.ir_version = data.draw(st.sampled_from((0, 1, 3, 11, 100)))
    else:
        model.opset_import.add(domain="com.example", version=1)


STRUCTURED = (mutate_tensor, mutate_type, mutate_attribute, mutate_node, mutate_model)


def mutate_structured(model: onnx.ModelProto, data: st.DataObject) -> None:
    """One structured change, its kind drawn first."""
    change = data.draw(st.sampled_from(STRUCTURED), label="onnx change")
    change(model, data)
