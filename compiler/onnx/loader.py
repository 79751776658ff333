"""Reading, checking and shape-fixing an ONNX model before conversion.

`load_model` accepts a path or a ModelProto and runs ``onnx.checker``; `check_operators`
rejects unsupported operators up front; `fix_input_shapes` resolves dynamic input
dimensions with the user's ``--input-shape`` values and runs ONNX shape inference.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import onnx
import onnx.inliner
import onnx.serialization
from google.protobuf.message import DecodeError

from nxcc.compiler.onnx.dtypes import to_ir_dtype
from nxcc.compiler.onnx.errors import (
    BAD_ARGUMENT,
    DYNAMIC,
    MALFORMED,
    UNSUPPORTED_FEATURE,
    UNSUPPORTED_OP,
    FrontendError,
)
from nxcc.compiler.onnx.functions import has_function
from nxcc.compiler.onnx.registry import CONVERTERS
from nxcc.compiler.onnx.validate import node_inputs, validate_graph
from nxcc.ir.limits import oversize
from nxcc.ir.types import TensorType

MIN_OPSET = 7
DEFAULT_DOMAINS = ("", "ai.onnx")
TWO_GB = 2**31


def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


def read_model_file(path: Path) -> onnx.ModelProto:
    """The ModelProto in the file at `path`, its external data loaded (as `onnx.load`).

    A binary protobuf file (any extension ONNX does not read as a text format) is parsed
    from a read-only memory map of the file: `onnx.load` reads it into a bytes object
    first, a second copy of every weight (434 MB and 0.2 of its 0.38 s for the BERT-size
    encoder, most of it page faults). Text formats go through `onnx.load`. Raises what
    parsing raises (DecodeError...)."""
    fmt = onnx.serialization.registry.get_format_from_file_extension(path.suffix)
    if fmt not in (None, "protobuf"):
        return onnx.load(str(path))
    proto = onnx.ModelProto()
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            proto.ParseFromString(b"")
        else:
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped, \
                    memoryview(mapped) as view:
                # copies what it keeps; protobuf parses any buffer, its stubs say bytes
                decoded = proto.ParseFromString(view)  # type: ignore[arg-type]
                if decoded is not None and decoded != size:
                    raise DecodeError(f"decoding consumed {decoded} of {size} bytes")
    onnx.load_external_data_for_model(proto, str(path.parent))
    return proto


def load_model(model: onnx.ModelProto | str | Path) -> tuple[onnx.ModelProto, str]:
    """The model and how messages name it (its file name); checked with ``onnx.checker``.

    FrontendError (NCC_EFRM001) when the file is missing, is not an ONNX protobuf, reads
    values nothing defines, has a cycle or an initializer that does not fill its shape
    (`validate.validate_graph`; nodes merely out of order are sorted), or fails the
    checker.
    """
    if isinstance(model, onnx.ModelProto):
        proto, source, path = model, model.graph.name or "<model>", None
    else:
        path = Path(model)
        source = str(path)
        if not path.is_file():
            raise FrontendError(f"cannot read ONNX model '{source}': no such file", MALFORMED)
        try:
            proto = read_model_file(path)
        except Exception as exc:  # noqa: BLE001 - protobuf raises various types
            raise FrontendError(
                f"'{source}' is not a valid ONNX model: cannot parse it as an ONNX protobuf "
                f"({_first_line(exc)})", MALFORMED) from None
    try:
        order = validate_graph(proto.graph)
    except FrontendError as exc:
        raise FrontendError(f"'{source}' is not a valid ONNX model: {exc.message}",
                            MALFORMED) from None
    if order != list(range(len(proto.graph.node))):
        nodes = [onnx.NodeProto.FromString(proto.graph.node[i].SerializeToString())
                 for i in order]
        if path is None:  # never reorder the caller's own proto
            proto = onnx.ModelProto.FromString(proto.SerializeToString())
        del proto.graph.node[:]
        proto.graph.node.extend(nodes)
    try:  # the weights' bytes were checked by validate_graph; the copy is far under 2 GB
        onnx.checker.check_model(weightless(proto))
    except Exception as exc:  # noqa: BLE001 - ValidationError and C++ errors alike
        raise FrontendError(
            f"'{source}' is not a valid ONNX model: {_first_line(exc)}", MALFORMED) from None
    if proto.functions:
        proto = onnx.inliner.inline_local_functions(proto)
    return proto, source


def upgrade_opset(proto: onnx.ModelProto) -> onnx.ModelProto:
    """`proto` itself, or converted with ``onnx.version_converter`` to opset `MIN_OPSET` when
    its default-domain opset is older; FrontendError if the conversion fails."""
    opset = model_opsets(proto).get("", 0)
    if opset == 0 or opset >= MIN_OPSET:
        return proto
    try:
        return onnx.version_converter.convert_version(proto, MIN_OPSET)
    except Exception as exc:  # noqa: BLE001 - the converter raises C++ errors of any kind
        raise FrontendError(
            f"ONNX opset {opset} is older than {MIN_OPSET} and onnx's version converter cannot "
            f"upgrade it ({_first_line(exc)})", UNSUPPORTED_FEATURE) from None


def model_opsets(proto: onnx.ModelProto) -> dict[str, int]:
    """Domain -> opset version; the default domain under ''."""
    opsets = {}
    for imp in proto.opset_import:
        domain = "" if imp.domain in DEFAULT_DOMAINS else imp.domain
        opsets[domain] = imp.version
    return opsets


def check_operators(proto: onnx.ModelProto) -> int:
    """The default-domain opset; FrontendError at the first node nxcc cannot convert
    (one with neither a converter nor an ONNX function body)."""
    opsets = model_opsets(proto)
    opset = opsets.get("", 0)
    uses_default = any(n.domain in DEFAULT_DOMAINS for n in proto.graph.node)
    if opset < MIN_OPSET and uses_default:
        raise FrontendError(
            f"ONNX opset {opset} is not supported (nxcc converts opset {MIN_OPSET} and later)",
            UNSUPPORTED_FEATURE)
    for index, node in enumerate(proto.graph.node):
        domain = "" if node.domain in DEFAULT_DOMAINS else node.domain
        if (f"{domain}.{node.op_type}" if domain else node.op_type) in CONVERTERS:
            continue
        if has_function(node.op_type, domain, opsets.get(domain, 0)):
            continue  # converted through its ONNX function body
        name = f"{domain}.{node.op_type}" if domain else node.op_type
        raise FrontendError(
            f"unsupported ONNX operator '{name}' (node '{node.name or f'#{index}'}', "
            f"opset {opsets.get(domain, 0)})", UNSUPPORTED_OP)
    return opset


# Operators whose outputs depend only on their inputs' (static) shapes, not their values.
SHAPE_ONLY = frozenset({"Shape", "Size"})


def value_sources(nodes: Sequence[onnx.NodeProto], value: str, sources: Iterable[str]
                  ) -> list[str]:
    """Which of `sources` (values no node of `nodes` produces: graph or call inputs) ONNX
    value `value` is computed from, in discovery order; not through Shape or Size, which
    read only static shapes."""
    producer = {o: n for n in nodes for o in n.output if o}
    wanted = set(sources)
    found: list[str] = []
    seen: set[str] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if v in seen or not v:
            continue
        seen.add(v)
        if v in producer:
            if producer[v].op_type not in SHAPE_ONLY:
                todo.extend(node_inputs(producer[v]))
        elif v in wanted:
            found.append(v)
    return found


def graph_inputs(proto: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The graph inputs that are not initializers (the program's parameters)."""
    inits = {t.name for t in proto.graph.initializer}
    inits.update(t.values.name for t in proto.graph.sparse_initializer)
    return [v for v in proto.graph.input if v.name not in inits]


def _dims(info: onnx.ValueInfoProto) -> list[int | str] | None:
    """Static dims as ints, dynamic ones as their dim_param ('' when anonymous)."""
    tt = info.type.tensor_type
    if not tt.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else d.dim_param for d in tt.shape.dim]


def _shape_arg(name: str, shape: Sequence[int]) -> str:
    return f"{name}={','.join(str(d) for d in shape)}"


def input_types(proto: onnx.ModelProto, input_shapes: Mapping[str, Sequence[int]] | None
                ) -> list[tuple[str, TensorType]]:
    """Each parameter's name and static type, dynamic dims resolved from `input_shapes`."""
    params = graph_inputs(proto)
    given = dict(input_shapes or {})
    names = [p.name for p in params]
    for key, sizes in given.items():
        if key not in names:
            raise FrontendError(
                f"--input-shape names '{key}', which is not an input of the model "
                f"(inputs: {', '.join(names) or 'none'})", BAD_ARGUMENT)
        if not isinstance(sizes, Sequence) or isinstance(sizes, str) or any(
                isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in sizes):
            raise FrontendError(
                f"--input-shape for '{key}' must be a list of sizes >= 0, got {sizes!r}",
                BAD_ARGUMENT)
    out = []
    for info in params:
        if not info.type.HasField("tensor_type"):
            raise FrontendError(
                f"input '{info.name}' is not a tensor (sequence, map and optional inputs "
                "are not supported)", UNSUPPORTED_FEATURE)
        dtype = to_ir_dtype(info.type.tensor_type.elem_type, f"input '{info.name}'")
        dims = _dims(info)
        shape = given.get(info.name)
        if shape is not None:
            shape = [int(d) for d in shape]
            if dims is not None and len(dims) != len(shape):
                raise FrontendError(
                    f"--input-shape {_shape_arg(info.name, shape)} has rank {len(shape)} but "
                    f"input '{info.name}' has rank {len(dims)}", BAD_ARGUMENT)
            for i, (d, s) in enumerate(zip(dims or [], shape, strict=False)):
                if isinstance(d, int) and d != s:
                    raise FrontendError(
                        f"--input-shape {_shape_arg(info.name, shape)}: dimension {i} of input "
                        f"'{info.name}' is fixed to {d} by the model", BAD_ARGUMENT)
        elif dims is None:
            raise FrontendError(
                f"input '{info.name}' has an unknown shape; give it with --input-shape "
                f"{info.name}=D0,D1,...", DYNAMIC)
        else:
            for i, d in enumerate(dims):
                if not isinstance(d, int):
                    what = f" ('{d}')" if d else ""
                    raise FrontendError(
                        f"input '{info.name}' has a dynamic dimension {i}{what}; give its size "
                        f"with --input-shape {info.name}=D0,D1,...", DYNAMIC)
            shape = [int(d) for d in dims]
        problem = oversize(shape, dtype.itemsize)
        if problem is not None:
            raise FrontendError(f"input '{info.name}': {problem}", MALFORMED)
        out.append((info.name, TensorType(dtype, tuple(shape))))
    return out


#: Initializers of more elements than this are left out of the copy that shape inference and
#: the checker see (`weightless`): no shape depends on such a tensor's values, and copying the
#: weights into onnx's C++ code and back took most of a large model's compile time.
INFER_MAX_ELEMENTS = 1024


def weightless(proto: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `proto` without its large initializers (over `INFER_MAX_ELEMENTS`): each
    becomes a graph input of its type and shape (unless it already is one, as before IR
    version 4). Nodes, inputs, outputs, value infos, small initializers, opsets and
    functions are copied; the weights' bytes are not."""
    light = onnx.ModelProto(ir_version=proto.ir_version, producer_name=proto.producer_name,
                            producer_version=proto.producer_version, domain=proto.domain,
                            model_version=proto.model_version)
    light.opset_import.extend(proto.opset_import)
    light.functions.extend(proto.functions)
    src, graph = proto.graph, light.graph
    graph.name = src.name
    graph.node.extend(src.node)
    graph.input.extend(src.input)
    graph.output.extend(src.output)
    graph.value_info.extend(src.value_info)
    graph.sparse_initializer.extend(src.sparse_initializer)
    inputs = {v.name for v in src.input}
    for t in src.initializer:
        count = 1
        for d in t.dims:
            count *= d
        if count <= INFER_MAX_ELEMENTS:
            graph.initializer.append(t)
        elif t.name not in inputs:
            graph.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type,
                                                                  list(t.dims)))
    return light


#: ops whose output shape depends on the values of an input (a target shape, axes, sizes,
#: pads, repeats, counts...): only through them can ONNX's data propagation, which computes
#: such values from Shape, Concat, Gather... of known ones, add anything to an inferred type
SHAPE_VALUE_READERS = frozenset({
    "AffineGrid", "CenterCropPad", "Col2Im", "ConstantOfShape", "DFT", "Expand",
    "MelWeightMatrix", "OneHot", "Pad", "Range", "Reshape", "Resize", "Slice", "Split",
    "Squeeze", "STFT", "Tile", "TopK", "Unsqueeze", "Upsample"})


def reads_shape_values(graph: onnx.GraphProto) -> bool:
    """Whether ONNX's data propagation can sharpen `graph`'s inferred types: a node reads
    shape values (`SHAPE_VALUE_READERS`, a reduction's axes input), is of another domain, or
    holds a subgraph. Propagation is most of inference's cost on a long chain of arithmetic
    (0.55 of 0.58 s for 100,000 elementwise ops) and gives such a graph nothing."""
    for node in graph.node:
        if (node.op_type in SHAPE_VALUE_READERS or node.op_type.startswith("Reduce")
                or node.domain not in ("", "ai.onnx")
                or any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                       for a in node.attribute)):
            return True
    return False


def infer_shapes(proto: onnx.ModelProto, types: Sequence[tuple[str, TensorType]]
                 ) -> onnx.ModelProto:
    """`weightless(proto)` with its parameters given the static `types`, shape-inferred:
    its value infos are ONNX's view of each value's type; its large initializers are
    missing (take them from `proto`).

    Inference is best effort: when it fails, the copy is returned without inferred value
    infos.
    """
    fixed = weightless(proto)
    static = dict(types)
    for info in fixed.graph.input:
        if info.name in static:
            shape = info.type.tensor_type.shape
            shape.Clear()
            for d in static[info.name].shape:
                shape.dim.add().dim_value = d
    if fixed.ByteSize() >= TWO_GB:
        return fixed
    try:
        return onnx.shape_inference.infer_shapes(fixed, strict_mode=False,
                                                 data_prop=reads_shape_values(fixed.graph))
    except Exception:  # noqa: BLE001 - inference is only advisory
        return fixed
