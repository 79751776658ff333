"""Structural checks of an ONNX graph, with messages that say what is wrong.

`validate_graph` runs before ``onnx.checker`` (whose message for these cases is a
fragment): every value a node reads must be a graph input, an initializer or the output of
a node; nodes that are merely out of order are put in order (by the caller); a cycle is
refused naming the nodes on it; a tensor anywhere in the graph or its subgraphs
(initializer, attribute) whose data does not fill its shape is refused naming it, and one of
an element type ONNX does not define (NCC_EDTY001), UNDEFINED, or with a negative dimension;
so is an attribute that refers to a function's attribute outside a function. Each
failure is a FrontendError (NCC_EFRM001 unless said) with a one-line message.
"""

from __future__ import annotations

import math

import onnx
from onnx import numpy_helper

from nxcc.compiler.onnx.errors import MALFORMED, UNSUPPORTED_DTYPE, FrontendError

# bits per element of the sub-byte types (the others use numpy's itemsize)
SUB_BYTE_BITS: dict[int, int] = {onnx.TensorProto.INT4: 4, onnx.TensorProto.UINT4: 4,
                                 onnx.TensorProto.FLOAT4E2M1: 4, onnx.TensorProto.INT2: 2,
                                 onnx.TensorProto.UINT2: 2}


ONNX_TYPES = frozenset(onnx.TensorProto.DataType.values())


def node_inputs(node: onnx.NodeProto) -> list[str]:
    """The values `node` reads: its inputs, and the outer values its subgraphs use."""
    names = list(node.input)
    for attr in node.attribute:
        graphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else (
            list(attr.graphs) if attr.type == onnx.AttributeProto.GRAPHS else [])
        for g in graphs:
            local = {v.name for v in g.input} | {t.name for t in g.initializer}
            local |= {o for n in g.node for o in n.output}
            inner = [n for sub in g.node for n in node_inputs(sub)]
            inner += [o.name for o in g.output]
            names += [n for n in inner if n and n not in local]
    return names


def _label(node: onnx.NodeProto, index: int) -> str:
    return f"node '{node.name or f'#{index}'}' ({node.op_type})"


def check_tensor(t: onnx.TensorProto, what: str) -> None:
    """FrontendError unless `t`'s data fills its declared shape exactly."""
    if t.data_type not in ONNX_TYPES or t.data_type == onnx.TensorProto.UNDEFINED:
        number = "UNDEFINED (0)" if t.data_type == onnx.TensorProto.UNDEFINED else t.data_type
        raise FrontendError(f"{what} '{t.name}' has element type {number}, which ONNX "
                            "does not define", UNSUPPORTED_DTYPE)
    if any(d < 0 for d in t.dims):
        raise FrontendError(f"{what} '{t.name}' has a negative dimension: {list(t.dims)}",
                            MALFORMED)
    if t.data_location == onnx.TensorProto.EXTERNAL or t.data_type == onnx.TensorProto.STRING:
        return
    count = math.prod(t.dims)
    if t.HasField("raw_data"):
        bits = SUB_BYTE_BITS.get(t.data_type)
        if bits is not None:
            need = (count * bits + 7) // 8
        else:
            try:
                need = count * onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
            except (KeyError, TypeError, ValueError):
                return
        if len(t.raw_data) != need:
            raise FrontendError(
                f"{what} '{t.name}' has {len(t.raw_data)} bytes of data, but its shape "
                f"{list(t.dims)} of {onnx.TensorProto.DataType.Name(t.data_type)} needs {need}",
                MALFORMED)
        return
    try:
        numpy_helper.to_array(t)
    except (ValueError, TypeError, KeyError) as exc:
        raise FrontendError(f"{what} '{t.name}' does not fill its shape {list(t.dims)} "
                            f"({exc})", MALFORMED) from None


def check_tensors(graph: onnx.GraphProto, where: str = "") -> None:
    """`check_tensor` on every tensor `graph` holds, in its subgraphs too: initializers
    (sparse ones' values and indices) and node attributes (`t`, `tensors`, sparse); and no
    attribute may refer to a function's attribute (`ref_attr_name`: a function body only)."""
    for t in graph.initializer:
        check_tensor(t, f"{where}initializer")
    for sparse in graph.sparse_initializer:
        check_tensor(sparse.values, f"{where}sparse initializer")
        check_tensor(sparse.indices, f"{where}sparse initializer indices")
    for i, node in enumerate(graph.node):
        label = f"{where}{_label(node, i)}"
        for attr in node.attribute:
            what = f"{label} attribute '{attr.name}'"
            if attr.ref_attr_name:
                raise FrontendError(f"{what} refers to the function attribute "
                                    f"'{attr.ref_attr_name}', which only a function body "
                                    "may", MALFORMED)
            tensors = [attr.t] if attr.HasField("t") else []
            tensors += list(attr.tensors)
            for sparse in [attr.sparse_tensor] if attr.HasField("sparse_tensor") else []:
                tensors += [sparse.values, sparse.indices]
            for t in tensors:
                check_tensor(t, what)
            subgraphs = [attr.g] if attr.HasField("g") else []
            for sub in subgraphs + list(attr.graphs):
                check_tensors(sub, f"{what}: ")


def validate_graph(graph: onnx.GraphProto) -> list[int]:
    """Check `graph`; the order in which to take its nodes (sorted topologically: the
    original order when the graph already is)."""
    check_tensors(graph)
    known = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    known |= {s.values.name for s in graph.sparse_initializer}
    producer: dict[str, int] = {}
    for i, node in enumerate(graph.node):
        for out in node.output:
            if out and out in producer:
                other = graph.node[producer[out]]
                raise FrontendError(
                    f"value '{out}' is produced twice, by {_label(other, producer[out])} and "
                    f"{_label(node, i)}", MALFORMED)
            if out:
                producer[out] = i
    for i, node in enumerate(graph.node):
        for name in node_inputs(node):
            if name and name not in known and name not in producer:
                raise FrontendError(
                    f"{_label(node, i)} reads '{name}', which no node, graph input or "
                    "initializer defines", MALFORMED)
    for output in graph.output:
        if output.name not in known and output.name not in producer:
            raise FrontendError(f"graph output '{output.name}' is not computed by any node, "
                                "input or initializer", MALFORMED)
    return _topological_order(graph, producer, known)


def _topological_order(graph: onnx.GraphProto, producer: dict[str, int], known: set[str]
                       ) -> list[int]:
    """Node indices in an order where every node follows its producers (stable: the
    original order when it already is one); FrontendError naming a cycle otherwise."""
    deps = [sorted({producer[n] for n in node_inputs(node) if n in producer and n not in known})
            for node in graph.node]
    state = [0] * len(deps)  # 0 new, 1 on the stack, 2 done
    order: list[int] = []
    for start in range(len(deps)):
        if state[start]:
            continue
        stack = [(start, iter(deps[start]))]
        state[start] = 1
        while stack:
            i, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                state[i] = 2
                order.append(i)
            elif state[nxt] == 1:
                path = [j for j, _ in stack]
                cycle = path[path.index(nxt):] + [nxt]
                names = " -> ".join(_label(graph.node[j], j) for j in cycle)
                raise FrontendError(f"the graph has a cycle: {names}", MALFORMED)
            elif state[nxt] == 0:
                state[nxt] = 1
                stack.append((nxt, iter(deps[nxt])))
    return order
