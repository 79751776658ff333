"""The attributes of one HloInstructionProto, as HLO text would write them after it.

`attributes(p, cx)` gives ``{name: Attribute}`` with the names the text form uses
(`dimensions`, `index`, `slice`, `window`, `dim_labels`, `to_apply`, `replica_groups`,
`sharding`, ...), each with its text (`raw`) and the typed value `compiler.hlo.attributes`
reads from that text. Which attributes an opcode has, and when a default is left out,
follows XLA's printer; a proto field that does not belong to the opcode is not read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from nxcc.compiler.hlo.attributes import parse_attribute
from nxcc.compiler.hlo.nodes import Attribute, Shape
from nxcc.compiler.hlo.proto import enums
from nxcc.compiler.hlo.proto import text_forms as T
from nxcc.compiler.hlo.proto.schema import HloMessage

#: Opcodes whose `dimensions` attribute XLA always prints (also when empty).
DIMENSION_OPS = frozenset({"broadcast", "concatenate", "reverse", "reduce", "transpose",
                           "sort", "map", "all-gather", "all-gather-start", "reduce-scatter"})
#: Opcodes calling one computation as `to_apply=`.
TO_APPLY_OPS = frozenset({"call", "map", "reduce", "reduce-window", "all-reduce",
                          "all-reduce-start", "reduce-scatter", "scatter", "sort"})
#: Opcodes with `replica_groups=` (always printed).
GROUPED_OPS = frozenset({"all-reduce", "all-reduce-start", "all-gather", "all-gather-start",
                         "reduce-scatter", "all-to-all", "collective-broadcast"})
PERMUTE_OPS = frozenset({"collective-permute", "collective-permute-start"})
LINALG_OPS = frozenset({"dot", "convolution", "reduce-window", "select-and-scatter"})

Emitted = tuple[str, str, object]  # (name, text, typed value or None to read the text)


@dataclass
class AttrContext:
    """What the attributes of an instruction refer to: computation names by id, the
    names of instructions by id (its computation's), its operands' shapes (set for each
    instruction); `cache` keeps the typed value of each (name, text) seen, as the text
    parser does (the values are immutable)."""

    computation_name: Callable[[int], str]
    instruction_name: Callable[[int], str]
    operand_shapes: list[Shape] = field(default_factory=list)
    cache: dict[tuple[str, str], object] = field(default_factory=dict)


def attributes(p: HloMessage, cx: AttrContext) -> dict[str, Attribute]:
    """The attributes of instruction `p` (PieceError/ValueError from a value's parser and
    ProtoFieldError from an unwritable field propagate)."""
    out: dict[str, Attribute] = {}
    cache = cx.cache
    for name, raw, value in _emitted(p, cx):
        if value is None:
            value = cache.get((name, raw), cache)
            if value is cache:
                value = cache[(name, raw)] = parse_attribute(name, raw)
        out[name] = Attribute(name, value, raw, 0)
    return out


def _emitted(p: HloMessage, cx: AttrContext) -> Iterator[Emitted]:
    op = p.opcode
    yield from _shape_attrs(p, op)
    if p.called_computation_ids:
        yield from _called(p, op, cx)
    if op in LINALG_OPS:
        yield from _linalg(p, op)
    if op in ("gather", "scatter"):
        yield from _indexing(p, op)
    yield from _collective(p, op)
    yield from _misc(p, op, cx)
    yield from _annotations(p, cx)


def _shape_attrs(p: HloMessage, op: str) -> Iterator[Emitted]:
    if op == "iota":
        yield "iota_dimension", str(p.dimensions[0] if p.dimensions else 0), None
    elif op in DIMENSION_OPS or p.dimensions:
        yield "dimensions", T.ints(p.dimensions), None
    if op == "get-tuple-element":
        yield "index", str(p.tuple_index), None
    if op == "slice":
        yield "slice", T.slices(p.slice_dimensions), None
    if op == "dynamic-slice":
        yield "dynamic_slice_sizes", T.ints(p.dynamic_slice_sizes), None
    if op == "pad":
        yield "padding", T.padding(p.padding_config), None
    if op == "reduce-precision":
        yield "exponent_bits", str(p.exponent_bits), None
        yield "mantissa_bits", str(p.mantissa_bits), None


def _called(p: HloMessage, op: str, cx: AttrContext) -> Iterator[Emitted]:
    names = [cx.computation_name(i) for i in p.called_computation_ids]
    if not names:
        return
    pairs = {"while": ("body", "condition"), "select-and-scatter": ("select", "scatter")}
    if op in pairs:
        if len(names) != 2:
            raise T.ProtoFieldError(f"{op} calls {len(names)} computations, expected 2 "
                                    f"({', '.join(pairs[op])})")
        for attr, name in zip(pairs[op], names, strict=True):
            yield attr, name, name
        return
    shapes = cx.operand_shapes
    if op == "conditional" and len(names) == 2 and shapes and str(shapes[0]) == "pred[]":
        yield "true_computation", names[0], names[0]
        yield "false_computation", names[1], names[1]
    elif op == "conditional":
        yield "branch_computations", _names_text(names), tuple(names)
    elif op in TO_APPLY_OPS and len(names) == 1:
        yield "to_apply", names[0], names[0]
    elif op == "custom-call" or op in TO_APPLY_OPS:
        yield "called_computations", _names_text(names), tuple(names)
    else:  # a list of names, as `calls=` reads (one name written bare)
        yield "calls", names[0] if len(names) == 1 else _names_text(names), tuple(names)


def _names_text(names: list[str]) -> str:
    return "{" + ", ".join(names) + "}"


def _linalg(p: HloMessage, op: str) -> Iterator[Emitted]:
    if op in ("convolution", "reduce-window", "select-and-scatter") and p.window.dimensions:
        yield "window", T.window(p.window), None
    if op == "convolution":
        yield "dim_labels", T.dim_labels(p.convolution_dimension_numbers), None
        if p.feature_group_count > 1:
            yield "feature_group_count", str(p.feature_group_count), None
        if p.batch_group_count > 1:
            yield "batch_group_count", str(p.batch_group_count), None
    if op == "dot":
        d = p.dot_dimension_numbers
        for name, values in (("lhs_batch_dims", d.lhs_batch_dimensions),
                             ("lhs_contracting_dims", d.lhs_contracting_dimensions),
                             ("rhs_batch_dims", d.rhs_batch_dimensions),
                             ("rhs_contracting_dims", d.rhs_contracting_dimensions)):
            if values:
                yield name, T.ints(values), None
    if op in ("dot", "convolution"):
        prec = list(p.precision_config.operand_precision)
        if any(prec):
            words = [enums.PRECISIONS.get(x, "default") for x in prec]
            yield "operand_precision", "{" + ",".join(words) + "}", None
        alg = enums.DOT_ALGORITHMS.get(p.precision_config.algorithm)
        if alg is not None:
            yield "algorithm", alg, None


def _indexing(p: HloMessage, op: str) -> Iterator[Emitted]:
    if op == "gather":
        g = p.gather_dimension_numbers
        yield from _dim_numbers((("offset_dims", g.offset_dims, True),
                                 ("collapsed_slice_dims", g.collapsed_slice_dims, True),
                                 ("start_index_map", g.start_index_map, True),
                                 ("operand_batching_dims", g.operand_batching_dims, False),
                                 ("start_indices_batching_dims",
                                  g.start_indices_batching_dims, False)))
        yield "index_vector_dim", str(g.index_vector_dim), None
        yield "slice_sizes", T.ints(p.gather_slice_sizes), None
    if op == "scatter":
        s = p.scatter_dimension_numbers
        yield from _dim_numbers((("update_window_dims", s.update_window_dims, True),
                                 ("inserted_window_dims", s.inserted_window_dims, True),
                                 ("scatter_dims_to_operand_dims",
                                  s.scatter_dims_to_operand_dims, True),
                                 ("input_batching_dims", s.input_batching_dims, False),
                                 ("scatter_indices_batching_dims",
                                  s.scatter_indices_batching_dims, False)))
        yield "index_vector_dim", str(s.index_vector_dim), None
    if op in ("gather", "scatter") and p.indices_are_sorted:
        yield "indices_are_sorted", "true", None
    if op == "scatter" and p.unique_indices:
        yield "unique_indices", "true", None


def _dim_numbers(fields) -> Iterator[Emitted]:
    for name, values, always in fields:
        if always or values:
            yield name, T.ints(values), None


def _collective(p: HloMessage, op: str) -> Iterator[Emitted]:
    if p.channel_id > 0:
        yield "channel_id", str(p.channel_id), None
    if op in GROUPED_OPS:
        yield "replica_groups", T.replica_groups(p), None
    if op in PERMUTE_OPS:
        pairs = ",".join(f"{{{s.source},{s.target}}}" for s in p.source_target_pairs)
        yield "source_target_pairs", "{" + pairs + "}", None
    if p.use_global_device_ids:
        yield "use_global_device_ids", "true", None
    if p.constrain_layout:
        yield "constrain_layout", "true", None


def _default_comparison(shapes: list[Shape]) -> str:
    dtype = str(shapes[0]).split("[")[0] if shapes else ""
    if dtype.startswith(("f", "bf")):
        return "FLOAT"
    return "SIGNED" if dtype.startswith("s") else "UNSIGNED"


def _misc(p: HloMessage, op: str, cx: AttrContext) -> Iterator[Emitted]:
    if op == "compare":
        yield "direction", p.comparison_direction, None
        if p.comparison_type and p.comparison_type != _default_comparison(cx.operand_shapes):
            yield "type", p.comparison_type, None
    if op == "sort" and p.is_stable:
        yield "is_stable", "true", None
    if op == "rng-bit-generator":
        yield "algorithm", enums.RNG_ALGORITHMS.get(p.rng_algorithm, "rng_default"), None
    if op == "rng" and p.distribution in enums.RNG_DISTRIBUTIONS:
        yield "distribution", enums.RNG_DISTRIBUTIONS[p.distribution], None
    if op == "fusion" and p.fusion_kind:
        yield "kind", p.fusion_kind, None
    if op == "topk":
        yield "k", str(p.k), None
        yield "largest", "true" if p.largest else "false", None
    if op == "fft":
        yield "fft_type", enums.FFT_TYPES.get(p.fft_type, "FFT"), None
        yield "fft_length", T.ints(p.fft_length), None
    if op == "custom-call":
        yield "custom_call_target", T.quote(p.custom_call_target), None
        if p.custom_call_has_side_effect:
            yield "custom_call_has_side_effect", "true", None
        if p.custom_call_api_version in enums.API_VERSIONS:
            yield "api_version", enums.API_VERSIONS[p.custom_call_api_version], None
    if p.is_host_transfer:
        yield "is_host_transfer", "true", None


def _annotations(p: HloMessage, cx: AttrContext) -> Iterator[Emitted]:
    if p.async_execution_thread and p.async_execution_thread != "main":
        yield "async_execution_thread", T.quote(p.async_execution_thread), None
    if p.HasField("sharding"):
        yield "sharding", T.sharding(p.sharding), None
    if p.control_predecessor_ids:
        names = tuple(cx.instruction_name(i) for i in p.control_predecessor_ids)
        yield "control-predecessors", _names_text(list(names)), names
    if p.frontend_attributes.map:
        yield "frontend_attributes", T.key_values(dict(p.frontend_attributes.map)), None
    if p.backend_config:
        text = p.backend_config.decode("utf-8", errors="replace")
        yield "backend_config", T.quote(text), None
