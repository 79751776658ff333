"""The inputs and outputs of a TVM-graph `neff.json` (the real compiler's manifest).

Such a graph lists `nodes` (inputs are `"op": "null"` nodes named by `arg_nodes`; a compiled
subgraph is a `tvm_op` node with `output_names`), `heads` (the graph's outputs as
`[node, output, version]`), per entry (each node output, numbered through `node_row_ptr`)
its shape and dtype under `attrs.shape` / `attrs.dltype` (`["list_shape", [...]]`), and the
signatures `metadata.signatures.default.inputs/outputs` (name -> `{id, dtype, shape}`).
The signatures win where they are given; the entries fill in what they leave out (the
real files leave `outputs` empty). A name given twice (one output per physical core of a
logical core) is one tensor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nxcc.backend.neff.constants import MANIFEST_NAME
from nxcc.backend.neff.errors import NeffError

Tensor = dict[str, Any]


def graph_signature(graph: Mapping[str, Any], source: str) -> tuple[list[Tensor], list[Tensor]]:
    """(inputs, outputs) of `graph`, each `{"name", "dtype", "shape"}`; NeffError naming
    what does not hold together (a head or argument naming no node or entry, a shape that
    is not a list of sizes)."""
    entries = _Entries(graph, source)
    signatures = _mapping(_mapping(graph.get("metadata")).get("signatures"))
    signature = _mapping(signatures.get("default") or next(iter(signatures.values()), None))
    inputs = _from_signature(signature.get("inputs"), "input", source)
    if not inputs:
        inputs = [entries.tensor(nid, 0, "input") for nid in _ints(graph.get("arg_nodes"))]
    outputs = _from_signature(signature.get("outputs"), "output", source)
    if not outputs:
        heads = graph.get("heads", [])
        if not isinstance(heads, list):
            raise _bad(source, "'heads' is not a list")
        for head in heads:
            if not (isinstance(head, list) and len(head) >= 2
                    and all(type(v) is int for v in head[:2])):
                raise _bad(source, f"head {head!r} is not [node, output, version]")
            outputs.append(entries.tensor(head[0], head[1], "output"))
    return _unique(inputs), _unique(outputs)


class _Entries:
    """Shapes and dtypes of the graph's entries, found by (node, output)."""

    def __init__(self, graph: Mapping[str, Any], source: str) -> None:
        self.source = source
        nodes = graph.get("nodes")
        if not isinstance(nodes, list):
            raise _bad(source, "'nodes' is not a list")
        self.nodes: list[Any] = nodes
        attrs = _mapping(graph.get("attrs"))
        self.shapes = _typed_list(attrs.get("shape"))
        self.dtypes = _typed_list(attrs.get("dltype"))
        rows = graph.get("node_row_ptr")
        self.rows = list(rows) if isinstance(rows, list) else None

    def tensor(self, nid: int, index: int, kind: str) -> Tensor:
        if not 0 <= nid < len(self.nodes) or not isinstance(self.nodes[nid], dict):
            raise _bad(self.source, f"an {kind} names node {nid} of {len(self.nodes)}")
        node = self.nodes[nid]
        names = node.get("output_names")
        name = (names[index] if isinstance(names, list) and index < len(names)
                and isinstance(names[index], str) else
                str(node.get("name", f"node{nid}")) + (f":{index}" if index else ""))
        entry = self._entry(nid, index)
        shape = self.shapes[entry] if entry is not None and entry < len(self.shapes) else None
        dtype = self.dtypes[entry] if entry is not None and entry < len(self.dtypes) else None
        return {"name": name, "dtype": dtype if isinstance(dtype, str) else None,
                "shape": _shape(shape, name, self.source) if shape is not None else None}

    def _entry(self, nid: int, index: int) -> int | None:
        if self.rows is None:
            return None
        if not (nid + 1 < len(self.rows) and type(self.rows[nid]) is int
                and type(self.rows[nid + 1]) is int):
            raise _bad(self.source, f"node_row_ptr has no row for node {nid}")
        if not 0 <= index < self.rows[nid + 1] - self.rows[nid]:
            raise _bad(self.source, f"node {nid} has no output {index}")
        return self.rows[nid] + index


def _from_signature(section: object, kind: str, source: str) -> list[Tensor]:
    if not isinstance(section, dict):
        return []
    listed = []
    for position, (name, spec) in enumerate(section.items()):
        spec = _mapping(spec)
        order = spec.get("id") if type(spec.get("id")) is int else position
        dtype = spec.get("dtype")
        listed.append((order, position, {
            "name": str(name), "dtype": dtype if isinstance(dtype, str) else None,
            "shape": _shape(spec.get("shape"), str(name), source)}))
    return [t for _, _, t in sorted(listed, key=lambda item: item[:2])]


def _shape(value: object, name: str, source: str) -> list[int]:
    if not (isinstance(value, list) and all(type(d) is int and d >= -1 for d in value)):
        raise _bad(source, f"tensor {name!r} has shape {str(value)[:60]}, not a list of sizes")
    return list(value)


def _unique(tensors: list[Tensor]) -> list[Tensor]:
    seen: dict[str, Tensor] = {}
    for t in tensors:
        seen.setdefault(t["name"], t)
    return list(seen.values())


def _typed_list(value: object) -> list[Any]:
    """`["list_shape", [...]]` -> the list (a bare list is taken as it is)."""
    if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) \
            and isinstance(value[1], list):
        return value[1]
    return value if isinstance(value, list) else []


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _ints(value: object) -> Sequence[int]:
    return [v for v in value if type(v) is int] if isinstance(value, list) else []


def _bad(source: str, problem: str) -> NeffError:
    return NeffError(source, f"{MANIFEST_NAME}: {problem}")
