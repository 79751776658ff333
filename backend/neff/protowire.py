"""Just enough of the protobuf wire format to count a message's records of one field,
without its schema (the real compiler's debug info is protobuf)."""

from __future__ import annotations

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5


def count_field(data: bytes, field: int) -> int | None:
    """How many times top-level `field` occurs in the message `data`; None when `data` is
    not a well-formed message (a group, a truncated value, an unknown wire type)."""
    count = 0
    i, end = 0, len(data)
    while i < end:
        key, i = _varint(data, i)
        if key is None:
            return None
        number, wire = key >> 3, key & 7
        if wire == _VARINT:
            _, i = _varint(data, i)
        elif wire == _LENGTH:
            size, i = _varint(data, i)
            i += size or 0
        elif wire in (_FIXED64, _FIXED32):
            i += 8 if wire == _FIXED64 else 4
        else:
            return None
        if i > end:
            return None
        count += number == field
    return count


def _varint(data: bytes, i: int) -> tuple[int | None, int]:
    """(value, next index); (None, past the end) for a truncated or overlong varint."""
    value, shift = 0, 0
    while i < len(data) and shift < 64:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7
    return None, len(data) + 1
