"""ONNX model -> IR module: parameters, initializers, nodes (folded or converted), outputs."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from compiler.onnx.context import NodeContext, const_value
from compiler.onnx.dtypes import to_ir_dtype
from compiler.onnx.errors import INVALID_NODE, MALFORMED, FrontendError
from compiler.onnx.folding import fold_node
from compiler.onnx.loader import check_operators, infer_shapes, input_types, load_model
from compiler.onnx.registry import CONVERTERS
from ir.builder import Builder
from ir.core import Function, Module, Value
from ir.dtypes import DType
from ir.opdef import TypeRuleError
from ir.types import TensorType


def import_onnx(model: onnx.ModelProto | str | Path,
                input_shapes: Mapping[str, Sequence[int]] | None = None) -> Module:
    """The IR module computing `model` (a path or a ModelProto).

    The entry function ``main`` takes the graph inputs that are not initializers, in order
    and named after them, with dynamic dimensions fixed by `input_shapes` (name -> sizes),
    and returns the graph outputs, `result_names` being their ONNX names. Raises
    `FrontendError` (with an NCC error code) for anything it cannot compile.
    """
    proto, source = load_model(model)
    opset = check_operators(proto)
    types = input_types(proto, input_shapes)
    inferred = infer_shapes(proto, types)
    name = proto.graph.name or (Path(source).stem if not isinstance(model, onnx.ModelProto)
                                else "model")
    return _Importer(inferred, opset, types, name).run()


def attribute_values(node: onnx.NodeProto) -> dict[str, Any]:
    """The node's attributes as Python values: strings decoded, tensors as numpy arrays."""
    out: dict[str, Any] = {}
    for attr in node.attribute:
        value = onnx.helper.get_attribute_value(attr)
        if isinstance(value, bytes):
            value = value.decode()
        elif isinstance(value, onnx.TensorProto):
            value = numpy_helper.to_array(value)
        elif isinstance(value, list) and value and isinstance(value[0], bytes):
            value = [v.decode() for v in value]
        out[attr.name] = value
    return out


class _Importer:
    def __init__(self, proto: onnx.ModelProto, opset: int,
                 types: Sequence[tuple[str, TensorType]], name: str) -> None:
        self.graph = proto.graph
        self.opset = opset
        self.module = Module(re.sub(r"\s+", "_", name) or "model")
        params = [Value(t, n) for n, t in types]
        self.fn = self.module.add_function(Function("main", params))
        self.b = Builder(self.module, self.fn)
        self.values: dict[str, Value] = {p.name: p for p in params}  # type: ignore[misc]
        self.initializers = {t.name: t for t in self.graph.initializer}
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

    def run(self) -> Module:
        for index, node in enumerate(self.graph.node):
            self.convert(index, node)
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
    def convert(self, index: int, node: onnx.NodeProto) -> None:
        label = node.name or f"#{index}"
        user = f"node '{label}' ({node.op_type})"
        inputs = [self.value(n, user) if n else None for n in node.input]
        out_dtypes = [self.inferred_dtype(o) if o else None for o in node.output]
        folded = fold_node(node, self.opset, [const_value(v) for v in inputs], out_dtypes)
        ctx = NodeContext(self.b, node, self.opset, inputs, attribute_values(node), label)
        if folded is not None:
            outs: list[Value | None] = [
                self.b.constant(arr) if name else None
                for arr, name in zip(folded, node.output, strict=False)]
        else:
            try:
                outs = list(CONVERTERS[node.op_type](ctx))
            except (TypeRuleError, ValueError) as exc:
                raise ctx.fail(str(exc)) from None
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

    def check_output(self, ctx: NodeContext, name: str, v: Value) -> None:
        """The converted value agrees with ONNX's inferred type (a converter bug otherwise)."""
        dtype, shape = self.inferred_dtype(name), self.inferred_shape(name)
        if (dtype is not None and dtype is not v.type.dtype) or (
                shape is not None and shape != v.type.shape):
            want = TensorType(dtype or v.type.dtype, shape if shape is not None else
                              v.type.shape)
            raise ctx.fail(f"output '{name}' converts to {v.type}, but ONNX shape inference "
                           f"says {want}")
