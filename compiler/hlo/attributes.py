"""Typed values of instruction attributes, parsed from their text by attribute name.

`parse_attribute(name, text)` returns the value for a name the compiler knows (see
`PARSERS`) and `Opaque(text)` for any other; a malformed value of a known attribute raises
`PieceError` (message and offset within `text`). Values are immutable and may be shared.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from types import MappingProxyType

from nxcc.compiler.hlo.attr_windows import (  # noqa: F401  (ConvDims, Window are re-exported)
    ConvDims,
    Window,
    parse_dim_labels,
    parse_padding,
    parse_slice,
    parse_window,
)
from nxcc.compiler.hlo.mlir_attrs import looks_like_mlir_dict, parse_mlir_dict
from nxcc.compiler.hlo.nodes import Opaque
from nxcc.ir.sharding_notation.cursor import Cursor, PieceError, found, unquote
from nxcc.ir.sharding_notation.hlo_sharding import parse_replica_groups, parse_sharding

_INTS_FAST = re.compile(r"\{\s*(-?\d+(?:\s*,\s*-?\d+)*)?\s*\}\Z")
_INT_FAST = re.compile(r"[-+]?\d+\Z")
_NAME = re.compile(r"%?([A-Za-z_$][\w.\-$]*)\Z")
_WORD = re.compile(r"[A-Za-z_][\w\-]*\Z")


def parse_ints(text: str) -> tuple[int, ...]:
    """`{1,0}` (possibly empty)."""
    m = _INTS_FAST.match(text)
    if m:
        g = m.group(1)
        return tuple(int(x) for x in g.split(",")) if g else ()
    cur = Cursor(text)
    out = cur.ints("{", "}", "a list of integers like {1,0}")
    cur.finish("the integer list")
    return out


def parse_int(text: str) -> int:
    if _INT_FAST.match(text):
        return int(text)
    raise PieceError(f"expected an integer, found {found(text, 0)}", 0)


def parse_bool(text: str) -> bool:
    if text in ("true", "false"):
        return text == "true"
    raise PieceError(f"expected true or false, found {found(text, 0)}", 0)


def parse_name(text: str) -> str:
    """A computation name, with or without '%'; returned without it."""
    m = _NAME.match(text)
    if m:
        return m.group(1)
    raise PieceError(f"expected a computation name, found {found(text, 0)}", 0)


def parse_names(text: str) -> tuple[str, ...]:
    """`{%a, %b}` (or a single name) -> names without '%'."""
    if not text.startswith("{"):
        return (parse_name(text),)
    cur = Cursor(text)
    cur.expect("{")
    out: list[str] = []
    if not cur.eat("}"):
        while True:
            out.append(cur.word("a computation name").lstrip("%"))
            if cur.eat("}"):
                break
            cur.expect(",", "',' or '}' between names")
    cur.finish("the name list")
    return tuple(out)


def parse_word(text: str) -> str:
    if _WORD.match(text):
        return text
    raise PieceError(f"expected a keyword, found {found(text, 0)}", 0)


def enum(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text in choices:
            return text
        raise PieceError(f"expected one of {', '.join(choices)}, found {found(text, 0)}", 0)

    return parse


def parse_string(text: str) -> str:
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return unquote(text)
    raise PieceError(f"expected a quoted string, found {found(text, 0)}", 0)


def parse_int_lists(text: str) -> tuple[tuple[int, ...], ...]:
    """`{{0,1},{1,0}}`."""
    cur = Cursor(text)
    cur.expect("{", "'{' to start a list of integer lists")
    out: list[tuple[int, ...]] = []
    if not cur.eat("}"):
        while True:
            out.append(cur.ints("{", "}", "an integer list"))
            if cur.eat("}"):
                break
            cur.expect(",", "',' or '}' between integer lists")
    cur.finish("the list")
    return tuple(out)


def parse_words(text: str) -> tuple[str, ...]:
    """`{default,high}`."""
    cur = Cursor(text)
    cur.expect("{", "'{'")
    out: list[str] = []
    if not cur.eat("}"):
        while True:
            out.append(cur.word("a keyword"))
            if cur.eat("}"):
                break
            cur.expect(",", "',' or '}'")
    cur.finish("the list")
    return tuple(out)


def parse_key_values(text: str) -> MappingProxyType:
    """`{key=value key="value", key={...}}` (blanks or commas between): metadata,
    frontend_attributes. Values are strings (unquoted) or text (nested braces kept)."""
    cur = Cursor(text)
    cur.expect("{", "'{' to start a key=value list")
    out: dict[str, object] = {}
    while not cur.eat("}"):
        if cur.at_end():
            raise cur.error("'}' to close the list")
        key = cur.word("a key")
        cur.expect("=", f"'=' after '{key}'")
        cur.ws()
        if cur.peek('"'):
            out[key] = cur.string()
        elif cur.peek("{"):
            start, depth = cur.pos, 0
            while cur.pos < len(text):
                c = text[cur.pos]
                if c == '"':
                    cur.string()
                    continue
                depth += (c == "{") - (c == "}")
                cur.pos += 1
                if depth == 0:
                    break
            if depth:
                raise cur.error("'}' to close a nested value")
            out[key] = text[start:cur.pos]
        else:
            m = re.compile(r"[^\s,{}\"]+").match(text, cur.pos)
            if not m:
                raise cur.error(f"a value for '{key}'")
            cur.pos = m.end()
            raw = m.group(0)
            out[key] = int(raw) if _INT_FAST.match(raw) else raw
        cur.eat(",")
    cur.finish("the key=value list")
    return MappingProxyType(out)


def parse_backend_config(text: str) -> object:
    """A quoted string (its JSON decoded when it is JSON), bare JSON, or an MLIR attribute
    dictionary (a typed-FFI custom call's: `{uplo = 76 : ui8}`, see `mlir_attrs`)."""
    raw = parse_string(text) if text.startswith('"') else text
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        if text.startswith('"'):
            return raw
        if looks_like_mlir_dict(text):
            return parse_mlir_dict(text)
        raise PieceError("expected a quoted string, JSON or an MLIR attribute dictionary "
                         f"for backend_config, found {found(text, 0)}", 0) from None


def parse_opaque(text: str) -> Opaque:
    return Opaque(text)


_INT_LIST_ATTRS = (
    "dimensions", "dynamic_slice_sizes", "slice_sizes", "lhs_contracting_dims",
    "rhs_contracting_dims", "lhs_batch_dims", "rhs_batch_dims", "offset_dims",
    "collapsed_slice_dims", "start_index_map", "operand_batching_dims",
    "start_indices_batching_dims", "update_window_dims", "inserted_window_dims",
    "scatter_dims_to_operand_dims", "input_batching_dims", "scatter_indices_batching_dims",
    "fft_length",
)
_INT_ATTRS = (
    "iota_dimension", "index", "feature_group_count", "batch_group_count", "channel_id",
    "index_vector_dim", "exponent_bits", "mantissa_bits", "k", "tuple_index",
)
_BOOL_ATTRS = (
    "is_stable", "indices_are_sorted", "unique_indices", "constrain_layout",
    "use_global_device_ids", "custom_call_has_side_effect", "largest", "is_host_transfer",
    "left_side", "lower", "unit_diagonal",
)
_COMPUTATION_ATTRS = (
    "to_apply", "condition", "body", "true_computation", "false_computation", "select",
    "scatter", "comparator",
)

PARSERS: dict[str, Callable[[str], object]] = {
    **{n: parse_ints for n in _INT_LIST_ATTRS},
    **{n: parse_int for n in _INT_ATTRS},
    **{n: parse_bool for n in _BOOL_ATTRS},
    **{n: parse_name for n in _COMPUTATION_ATTRS},
    "calls": parse_names,
    "branch_computations": parse_names,
    "called_computations": parse_names,
    "control-predecessors": parse_names,
    "slice": parse_slice,
    "window": parse_window,
    "dim_labels": parse_dim_labels,
    "padding": parse_padding,
    "direction": enum("EQ", "NE", "LT", "LE", "GT", "GE"),
    "type": enum("FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED", "PARTIALORDER"),
    "replica_groups": parse_replica_groups,
    "source_target_pairs": parse_int_lists,
    "sharding": parse_sharding,
    "metadata": parse_key_values,
    "frontend_attributes": parse_key_values,
    "backend_config": parse_backend_config,
    "custom_call_target": parse_string,
    "execution_thread": parse_string,
    "async_execution_thread": parse_string,
    "api_version": parse_word,
    "kind": parse_word,
    "algorithm": parse_word,
    "distribution": parse_word,
    "fft_type": parse_word,
    "transpose_a": parse_word,
    "operand_precision": parse_words,
}


def parse_attribute(name: str, text: str) -> object:
    """The typed value of attribute `name` written as `text`; Opaque for unknown names."""
    parser = PARSERS.get(name)
    if parser is None:
        return Opaque(text)
    return parser(text)
