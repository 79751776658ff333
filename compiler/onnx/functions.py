"""Operators defined by an ONNX function body, expanded into their body's nodes.

Many ONNX operators (Attention, RMSNormalization, SoftmaxCrossEntropyLoss, Shrink, the
window functions...) come with a definition in terms of other operators: a FunctionProto in
their schema, or a context-dependent one that onnx builds for the node's attributes and
input types. When nxcc has no converter for an operator, the importer converts the body
instead: `expand_node` returns the body's nodes with their values renamed into the graph
(inputs and outputs mapped to the node's, internals prefixed), attribute references
resolved against the node's attributes and the schema's defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

import onnx
from onnx import AttributeProto, FunctionProto, NodeProto, TypeProto

DEFAULT_DOMAINS = ("", "ai.onnx")


@dataclass(frozen=True)
class Expansion:
    """A node's function body: its nodes (renamed into the graph) and their opsets."""

    nodes: list[NodeProto]
    opsets: dict[str, int]  # domain ('' for the default one) -> version


class FunctionSchema(Protocol):
    """What this module reads of an `onnx.defs.OpSchema` (onnx's type stubs leave out the
    function accessors the compiled class has)."""

    @property
    def attributes(self) -> Mapping[str, onnx.defs.OpSchema.Attribute]: ...
    @property
    def has_function(self) -> bool: ...
    @property
    def has_context_dependent_function(self) -> bool: ...
    @property
    def function_opset_versions(self) -> list[int]: ...
    @property
    def context_dependent_function_opset_versions(self) -> list[int]: ...
    def get_function_with_opset_version(self, version: int) -> bytes: ...
    def get_context_dependent_function_with_opset_version(
            self, version: int, node: bytes, input_types: list[bytes]) -> bytes: ...


def schema_for(op_type: str, domain: str, version: int) -> FunctionSchema | None:
    """The schema of `op_type` in force at opset `version` of `domain`, or None."""
    try:
        return cast(FunctionSchema, onnx.defs.get_schema(
            op_type, version, "" if domain in DEFAULT_DOMAINS else domain))
    except onnx.defs.SchemaError:
        return None


def has_function(op_type: str, domain: str, version: int) -> bool:
    """Whether the operator has a (possibly context-dependent) function body at `version`."""
    schema = schema_for(op_type, domain, version)
    return schema is not None and (schema.has_function or
                                   schema.has_context_dependent_function)


def _best(versions: Sequence[int], version: int) -> int | None:
    """The latest function version at or before `version`; else the earliest one (a body
    written for a later opset of the same operator version, e.g. Shrink-9's at opset 18)."""
    usable = [v for v in versions if v <= version]
    if usable:
        return max(usable)
    return min(versions) if versions else None


def function_proto(node: NodeProto, version: int, input_types: Sequence[TypeProto | None]
                   ) -> FunctionProto | None:
    """The body of `node` at opset `version` of its domain, or None when it has none."""
    schema = schema_for(node.op_type, node.domain, version)
    if schema is None:
        return None
    fn = FunctionProto()
    plain = _best(schema.function_opset_versions, version)
    contextual = _best(schema.context_dependent_function_opset_versions, version)
    if contextual is not None and (plain is None or contextual >= plain):
        types = [(t if t is not None else TypeProto()).SerializeToString() for t in input_types]
        try:
            data = schema.get_context_dependent_function_with_opset_version(
                contextual, node.SerializeToString(), types)
        except Exception:  # noqa: BLE001 - onnx refuses contexts it cannot build for
            return None
        if not data:
            return None
        fn.ParseFromString(data)
        return fn
    if plain is not None:
        fn.ParseFromString(schema.get_function_with_opset_version(plain))
        return fn
    return None


def _attribute_map(node: NodeProto, fn: FunctionProto, schema: FunctionSchema | None
                   ) -> dict[str, AttributeProto]:
    """Attribute name -> value for references: the node's, else the function's or schema's
    defaults."""
    out: dict[str, AttributeProto] = {}
    if schema is not None:
        for name, spec in schema.attributes.items():
            default = spec.default_value
            if default is not None and default.type != AttributeProto.UNDEFINED:
                out[name] = default
    for attr in fn.attribute_proto:
        out[attr.name] = attr
    for attr in node.attribute:
        out[attr.name] = attr
    return out


def _rename_subgraphs(attr: AttributeProto, rename: Callable[[str], str]) -> AttributeProto:
    """A copy of graph attribute `attr` whose references to the function body's values
    (names its graphs do not define themselves) go through `rename`."""
    out = AttributeProto()
    out.CopyFrom(attr)
    for g in ([out.g] if attr.type == AttributeProto.GRAPH else list(out.graphs)):
        _rename_outer(g, rename)
    return out


def _rename_outer(graph: onnx.GraphProto, rename: Callable[[str], str]) -> None:
    local = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    local |= {o for n in graph.node for o in n.output}

    def outer(name: str) -> str:
        return name if not name or name in local else rename(name)

    for node in graph.node:
        node.input[:] = [outer(n) for n in node.input]
        for attr in node.attribute:
            for g in ([attr.g] if attr.type == AttributeProto.GRAPH else
                      list(attr.graphs) if attr.type == AttributeProto.GRAPHS else []):
                _rename_outer(g, outer)
    for out in graph.output:
        out.name = outer(out.name)


def expand_node(node: NodeProto, version: int, input_types: Sequence[TypeProto | None],
                prefix: str) -> Expansion | None:
    """`node`'s function body renamed into the graph (internal values start with `prefix`),
    or None when the operator has no body onnx can build for it."""
    fn = function_proto(node, version, input_types)
    if fn is None:
        return None
    schema = schema_for(node.op_type, node.domain, version)
    attrs = _attribute_map(node, fn, schema)
    names: dict[str, str] = {}
    for i, name in enumerate(fn.input):
        names[name] = node.input[i] if i < len(node.input) else ""
    for i, name in enumerate(fn.output):
        if i < len(node.output) and node.output[i]:
            names[name] = node.output[i]

    def rename(name: str) -> str:
        if name in names:
            return names[name]
        return f"{prefix}{name}" if name else ""

    nodes = []
    for inner in fn.node:
        new = NodeProto()
        new.CopyFrom(inner)
        new.ClearField("input")
        new.ClearField("output")
        new.ClearField("attribute")
        new.input.extend(rename(n) for n in inner.input)
        new.output.extend(rename(n) for n in inner.output)
        for attr in inner.attribute:
            if attr.ref_attr_name:
                if attr.ref_attr_name not in attrs:
                    continue
                resolved = AttributeProto()
                resolved.CopyFrom(attrs[attr.ref_attr_name])
                resolved.name = attr.name
                new.attribute.append(resolved)
            elif attr.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
                new.attribute.append(_rename_subgraphs(attr, rename))
            else:
                new.attribute.append(attr)
        nodes.append(new)
    opsets = {("" if o.domain in DEFAULT_DOMAINS else o.domain): o.version
              for o in fn.opset_import}
    return Expansion(nodes, opsets)
