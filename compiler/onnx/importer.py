"""ONNX model -> IR module: parameters, initializers, nodes (folded or converted), outputs."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from nxcc.compiler.onnx.context import NodeContext, const_value
from nxcc.compiler.onnx.dtypes import IR_TO_ONNX, to_ir_dtype
from nxcc.compiler.onnx.errors import (
    DYNAMIC,
    INVALID_NODE,
    MALFORMED,
    UNSUPPORTED_OP,
    FrontendError,
)
from nxcc.compiler.onnx.functions import DEFAULT_DOMAINS, expand_node
from nxcc.compiler.onnx.loader import (
    check_operators,
    infer_shapes,
    input_types,
    load_model,
    model_opsets,
    upgrade_opset,
    value_sources,
)
from nxcc.compiler.onnx.registry import CONVERTERS
from nxcc.compiler.onnx.validate import node_inputs
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.interpreter import IRContext
from nxcc.ir.opdef import TypeRuleError
from nxcc.passes.constant_folding import fold_ops


def import_onnx(model: onnx.ModelProto | str | Path,
                input_shapes: Mapping[str, Sequence[int]] | None = None) -> Module:
    """The IR module computing `model` (a path or a ModelProto).

    The entry function ``main`` takes the graph inputs that are not initializers, in order
    and named after them, with dynamic dimensions fixed by `input_shapes` (name -> sizes),
    and returns the graph outputs, `result_names` being their ONNX names. Raises
    `FrontendError` (with an NCC error code) for anything it cannot compile.
    """
    proto, source = load_model(model)
    proto = upgrade_opset(proto)
    check_operators(proto)
    types = input_types(proto, input_shapes)
    inferred = infer_shapes(proto, types)
    name = proto.graph.name or (Path(source).stem if not isinstance(model, onnx.ModelProto)
                                else "model")
    if isinstance(name, bytes):  # protobuf hands back a name that is not UTF-8 as bytes
        name = name.decode("utf-8", "replace")
    module = Module(re.sub(r"\W+", "_", name).strip("_") or "model")
    fn = module.add_function(Function("main", [Value(t, n) for n, t in types]))
    return _Importer(module, fn, inferred.graph, model_opsets(proto),
                     initializers=proto.graph.initializer).run()


def attribute_values(node: onnx.NodeProto) -> dict[str, Any]:
    """The node's attributes as Python values: strings decoded, tensors as numpy arrays."""
    out: dict[str, Any] = {}
    for attr in node.attribute:
        try:
            value = onnx.helper.get_attribute_value(attr)
            if isinstance(value, bytes):
                value = value.decode()
            elif isinstance(value, onnx.TensorProto):
                value = numpy_helper.to_array(value)
            elif isinstance(value, list) and value and isinstance(value[0], bytes):
                value = [v.decode() for v in value]
        except (ValueError, TypeError, KeyError, UnicodeDecodeError) as exc:
            raise FrontendError(f"node '{node.name or node.op_type}' ({node.op_type}) "
                                f"attribute '{attr.name}' cannot be read: "
                                f"{str(exc).splitlines()[0][:160]}", MALFORMED) from None
        out[attr.name] = value
    return out


class _Importer:
    """Converts one ONNX graph into the body of one IR function.

    The model's graph becomes ``main``; a subgraph (an If branch, a Loop or Scan body) gets
    an importer of its own whose `parent` is the enclosing graph's. A subgraph's reference
    to an outer value becomes a new parameter of its function (`captures` records the
    outer values, in parameter order), unless `inline` (the subgraph is converted into
    the parent's own function, as a constant If condition allows), or the outer value is a
    constant (copied in, so it still folds). `initializers` replaces the graph's own (the
    model's, when `graph` is the weightless copy shape inference saw).
    """

    def __init__(self, module: Module, fn: Function, graph: onnx.GraphProto,
                 opsets: dict[str, int], parent: _Importer | None = None,
                 inline: bool = False,
                 initializers: Iterable[onnx.TensorProto] | None = None) -> None:
        self.graph = graph
        self.opsets = opsets
        self.module = module
        self.fn = fn
        self.b = Builder(module, fn)
        self.fold_context = IRContext(module)
        self.parent = parent
        self.inline = inline
        self.captures: list[Value] = []
        self.values: dict[str, Value] = {p.name: p for p in fn.params
                                         if p.name is not None}
        inits = self.graph.initializer if initializers is None else initializers
        self.initializers: dict[str, Any] = {t.name: t for t in inits}
        for sparse in self.graph.sparse_initializer:
            self.initializers.setdefault(sparse.values.name, sparse)
        # ONNX's view of each value's type: intermediate values as shape inference has them;
        # for graph outputs only the declared element type (declared shapes may be stale)
        self.inferred: dict[str, onnx.TypeProto] = {}
        for info in self.graph.value_info:
            if info.type.HasField("tensor_type"):
                self.inferred[info.name] = info.type
        for info in self.graph.output:
            if info.type.HasField("tensor_type"):
                elem_only = onnx.TypeProto()
                elem_only.tensor_type.elem_type = info.type.tensor_type.elem_type
                self.inferred[info.name] = elem_only

    def subgraph(self, graph: onnx.GraphProto, params: Sequence[Value], name: str,
                 label: str) -> tuple[Function, list[Value]]:
        """`graph` converted into a new function taking `params` (named after the graph's
        inputs) and then one parameter per captured outer value; returns the function and
        the outer values to pass for those captures."""
        fn = self.module.add_function(Function(self.module.unique_function_name(name),
                                               list(params)))
        sub = _Importer(self.module, fn, graph, self.opsets, parent=self)
        with self._outer_dynamic(graph.node):
            sub.convert_nodes(label)
        for out in graph.output:
            fn.results.append(sub.value(out.name, f"output '{out.name}' of {label}"))
        return fn, sub.captures

    def inline_graph(self, graph: onnx.GraphProto, label: str,
                     bindings: dict[str, Value] | None = None) -> list[Value]:
        """`graph` converted into this importer's function, its inputs bound to `bindings`;
        its outputs."""
        sub = _Importer(self.module, self.fn, graph, self.opsets, parent=self, inline=True)
        sub.values.update(bindings or {})
        with self._outer_dynamic(graph.node):
            sub.convert_nodes(label)
        return [sub.value(out.name, f"output '{out.name}' of {label}") for out in graph.output]

    @contextmanager
    def _outer_dynamic(self, nodes: Sequence[onnx.NodeProto]) -> Iterator[None]:
        """Re-raise a subgraph's NCC_EMOD025 error (a value needed at compile time) about
        the non-constant value of this scope it is computed from, when there is one."""
        try:
            yield
        except FrontendError as exc:
            if exc.code != DYNAMIC or exc.value is None or exc.value in self.values:
                raise
            names = {n for node in nodes for n in node_inputs(node)}
            outer = [n for n in value_sources(nodes, exc.value, sorted(names))
                     if self.defines(n) and const_value(self.lookup(n)) is None]
            if not outer:
                raise
            raise FrontendError(exc.message, exc.code, outer[0]) from None

    def lookup(self, name: str) -> Value | None:
        """The value `name` has here, if it has been converted (no capture made)."""
        if name in self.values:
            return self.values[name]
        return self.parent.lookup(name) if self.parent is not None else None

    def convert_nodes(self, prefix: str = "") -> None:
        for index, node in enumerate(self.graph.node):
            self.convert(f"{prefix}/{index}" if prefix else index, node)

    def run(self) -> Module:
        self.convert_nodes()
        for out in self.graph.output:
            v = self.value(out.name, f"graph output '{out.name}'")
            if out.type.HasField("tensor_type") and out.type.tensor_type.elem_type:
                want = to_ir_dtype(out.type.tensor_type.elem_type, f"output '{out.name}'")
                if want is not v.type.dtype:
                    raise FrontendError(
                        f"output '{out.name}' is declared {want} but computes {v.type}",
                        INVALID_NODE)
            self.fn.results.append(v)
            self.fn.result_names.append(out.name)
        return self.module

    # -- values ------------------------------------------------------------------------
    def value(self, name: str, user: str) -> Value:
        """The IR value of ONNX value `name` (initializers become constants on first use)."""
        if name in self.values:
            return self.values[name]
        init = self.initializers.get(name)
        if init is None and self.parent is not None and self.parent.defines(name):
            return self._capture(name, self.parent.value(name, user))
        if init is None:
            raise FrontendError(f"{user} uses '{name}', which no node, input or initializer "
                                "defines", MALFORMED)
        if isinstance(init, onnx.SparseTensorProto):
            dense = onnx.numpy_helper.to_array(init.values)
            arr = np.zeros(tuple(init.dims), dense.dtype)
            idx = numpy_helper.to_array(init.indices)
            if idx.ndim == 1:
                arr.reshape(-1)[idx] = dense
            else:
                arr[tuple(idx.T)] = dense
            elem = init.values.data_type
        else:
            arr, elem = numpy_helper.to_array(init), init.data_type
        dtype = to_ir_dtype(elem, f"initializer '{name}'")
        v = self.b.constant(np.asarray(arr), dtype)
        v.name = name
        self.values[name] = v
        return v

    def defines(self, name: str) -> bool:
        """Whether `name` is visible here (defined so far, an initializer, or outer)."""
        return (name in self.values or name in self.initializers or
                (self.parent is not None and self.parent.defines(name)))

    def _capture(self, name: str, outer: Value) -> Value:
        """The local stand-in for outer value `outer`: itself when inline, a copy of a
        constant, else a new parameter of this function."""
        if self.inline:
            v = outer
        elif const_value(outer) is not None:
            v = self.b.constant(np.asarray(const_value(outer)), outer.type.dtype)
        else:
            v = Value(outer.type, name)
            self.fn.params.append(v)
            self.captures.append(outer)
        self.values[name] = v
        return v

    def inferred_dtype(self, name: str) -> DType | None:
        t = self.inferred.get(name)
        if t is None or not t.tensor_type.elem_type:
            return None
        return to_ir_dtype(t.tensor_type.elem_type, f"value '{name}'")

    def inferred_shape(self, name: str) -> tuple[int, ...] | None:
        t = self.inferred.get(name)
        if t is None or not t.tensor_type.HasField("shape"):
            return None
        dims = t.tensor_type.shape.dim
        if not all(d.HasField("dim_value") for d in dims):
            return None
        return tuple(d.dim_value for d in dims)

    # -- nodes -------------------------------------------------------------------------
    def convert(self, index: int | str, node: onnx.NodeProto,
                opsets: dict[str, int] | None = None) -> None:
        """Convert `node` (its function body's nodes when nxcc has no converter for it)."""
        opsets = opsets or self.opsets
        label = node.name or (f"#{index}" if isinstance(index, int) else index)
        user = f"node '{label}' ({node.op_type})"
        inputs = [self.value(n, user) if n else None for n in node.input]
        domain = "" if node.domain in DEFAULT_DOMAINS else node.domain
        key = f"{domain}.{node.op_type}" if domain else node.op_type
        if key not in CONVERTERS:
            self.expand(label, node, inputs, opsets)
            return
        opset = opsets.get(domain, 0)
        ctx = NodeContext(self.b, node, opset, inputs, attribute_values(node), label, self)
        start = len(self.b.function.body)
        try:
            outs: list[Value | None] = list(CONVERTERS[key](ctx))
        except (TypeRuleError, ValueError) as exc:
            raise ctx.fail(str(exc)) from None
        # Ops of constant operands are computed now, with the kernels, so that later
        # converters can read shapes computed by the graph (Shape -> Gather -> Reshape...).
        folded = fold_ops(self.b.function, start, self.fold_context)
        outs = [folded.get(v, v) if v is not None else None for v in outs]
        for i, name in enumerate(node.output):
            if not name:
                continue
            v = outs[i] if i < len(outs) else None
            if v is None:
                raise ctx.unsupported(f"output {i} ('{name}')")
            self.check_output(ctx, name, v)
            if v.name is None:
                v.name = name
            self.values[name] = v

    def expand(self, label: str, node: onnx.NodeProto, inputs: list[Value | None],
               opsets: dict[str, int]) -> None:
        """Convert the nodes of `node`'s ONNX function body in its place."""
        domain = "" if node.domain in DEFAULT_DOMAINS else node.domain
        types = [None if v is None else onnx.helper.make_tensor_type_proto(
            IR_TO_ONNX[v.type.dtype], v.type.shape) for v in inputs]
        prefix = f"{label}/{node.op_type}/"
        body = expand_node(node, opsets.get(domain, 0), types, prefix)
        if body is None:
            name = f"{domain}.{node.op_type}" if domain else node.op_type
            raise FrontendError(f"unsupported ONNX operator '{name}' (node '{label}', opset "
                                f"{opsets.get(domain, 0)})", UNSUPPORTED_OP)
        inner = {**opsets, **body.opsets}
        try:
            for i, sub in enumerate(body.nodes):
                self.convert(f"{label}/{i}", sub, inner)
        except FrontendError as exc:
            if exc.code != DYNAMIC or exc.value is None:
                raise
            outer = [n for n in value_sources(body.nodes, exc.value, node.input)
                     if n and const_value(self.values.get(n)) is None]
            raise FrontendError(exc.message, exc.code, outer[0] if outer else None) from None
        for name in node.output:
            if name and name not in self.values:
                raise FrontendError(f"node '{label}' ({node.op_type}): its function body does "
                                    f"not compute output '{name}'", INVALID_NODE)

    def check_output(self, ctx: NodeContext, name: str, v: Value) -> None:
        """The converted value agrees with ONNX's inferred type (a converter bug otherwise)."""
        dtype, shape = self.inferred_dtype(name), self.inferred_shape(name)
        if (dtype is not None and dtype is not v.type.dtype) or (
                shape is not None and shape != v.type.shape):
            dims = shape if shape is not None else v.type.shape  # may be negative: no type
            want = f"{(dtype or v.type.dtype).value}[{','.join(map(str, dims))}]"
            raise ctx.fail(f"output '{name}' converts to {v.type}, but ONNX shape inference "
                           f"says {want}")
