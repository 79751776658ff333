"""What a model file holds, told from its bytes (not its name).

`detect(path)` reads the start of the file and says which of the inputs nxcc knows it looks
like: an ONNX `ModelProto`, XLA HLO text, a binary XLA `HloModuleProto`, or StableHLO text
(MLIR, as `jax.jit(f).lower(x).as_text()` prints it). Both binary forms are protobuf
messages; they are told apart by their first fields (an ONNX model starts with its
`ir_version`, a varint in field 1; an HLO module with its `name`, a string in field 1, then
its computations in field 3).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: How much of a file is read to recognise it.
SNIFF_BYTES = 1 << 16

ONNX = "onnx"
HLO_TEXT = "hlo-text"
HLO_PROTO = "hlo-proto"
STABLEHLO = "stablehlo"
UNKNOWN_TEXT = "text"
UNKNOWN_BINARY = "binary"

#: The framework (`--framework`) each recognised kind belongs to.
FRAMEWORK_OF = {ONNX: "ONNX", HLO_TEXT: "XLA", HLO_PROTO: "XLA", STABLEHLO: "XLA"}

DESCRIPTIONS = {
    ONNX: "an ONNX ModelProto",
    HLO_TEXT: "XLA HLO text",
    HLO_PROTO: "a binary XLA HloModuleProto",
    STABLEHLO: "StableHLO (MLIR) text",
    UNKNOWN_TEXT: "text that is neither HLO nor StableHLO",
    UNKNOWN_BINARY: "binary data that is neither an ONNX model nor an HloModuleProto",
}

# Leading blanks are matched as [ \t] (never \s, which also takes newlines): a file of
# newlines must not make the search quadratic or exponential.
_MLIR_MARKERS = re.compile(
    r"\bfunc\.func\b|\bstablehlo\.|\bmhlo\.|^[ \t]*module[ \t]+@\S+\s+attributes\b",
    re.MULTILINE)
_ENTRY = re.compile(r"^[ \t]*ENTRY\s", re.MULTILINE)


@dataclass(frozen=True)
class Detected:
    """The kind of a model file and its framework (None when unrecognised)."""

    kind: str

    @property
    def framework(self) -> str | None:
        return FRAMEWORK_OF.get(self.kind)

    @property
    def description(self) -> str:
        return DESCRIPTIONS[self.kind]


def detect(path: str) -> Detected:
    """The kind of the file at `path` (OSError if it cannot be read)."""
    with open(path, "rb") as f:
        head = f.read(SNIFF_BYTES)
    return Detected(detect_bytes(head))


def detect_bytes(head: bytes) -> str:
    """The kind of a file that starts with `head`."""
    text = _as_text(head)
    if text is not None:
        if _starts_hlo_module(text):
            return HLO_TEXT
        if _MLIR_MARKERS.search(text):
            return STABLEHLO
        if _ENTRY.search(text):
            return HLO_TEXT
        return UNKNOWN_TEXT
    return _protobuf_kind(head)


def _starts_hlo_module(text: str) -> bool:
    """The first line that is neither blank nor a `//` comment starts with `HloModule `."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("//"):
            return stripped == "HloModule" or stripped.startswith(("HloModule ", "HloModule\t"))
    return False


def _as_text(head: bytes) -> str | None:
    """`head` decoded as UTF-8 text, or None if it holds binary data."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if len(head) < SNIFF_BYTES or exc.start < len(head) - 4:
            return None
        text = head[:exc.start].decode("utf-8")  # a character cut by the read
    if any(ord(c) < 32 and c not in "\t\n\r\f" for c in text):
        return None
    return text


def _varint(data: bytes, pos: int) -> tuple[int, int] | None:
    """(value, next position) of the varint at `pos`, or None if it is cut or too long."""
    value = shift = 0
    while pos < len(data) and shift < 64:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7
    return None


def _top_level_fields(head: bytes) -> list[tuple[int, int]]:
    """(field number, wire type) of the message's leading top-level fields, as far as they
    can be walked in `head`; empty if the bytes are not protobuf wire format."""
    fields: list[tuple[int, int]] = []
    pos = 0
    while pos < len(head) and len(fields) < 16:
        tag = _varint(head, pos)
        if tag is None or tag[0] >> 3 == 0:
            return [] if not fields else fields
        number, wire, pos = tag[0] >> 3, tag[0] & 7, tag[1]
        if wire == 0:
            step = _varint(head, pos)
            if step is None:
                break
            pos = step[1]
        elif wire == 2:
            length = _varint(head, pos)
            if length is None:
                break
            pos = length[1] + length[0]
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            return []
        fields.append((number, wire))
    return fields


def _protobuf_kind(head: bytes) -> str:
    fields = _top_level_fields(head)
    if not fields:
        return UNKNOWN_BINARY
    first = fields[0]
    if first == (1, 0):
        return ONNX  # ir_version
    if first == (1, 2):
        return HLO_PROTO  # name
    if (7, 2) in fields and (8, 2) in fields:
        return ONNX  # graph and opset_import, no ir_version
    if first in ((2, 2), (3, 2)):
        return HLO_PROTO  # entry_computation_name, computations
    return UNKNOWN_BINARY
