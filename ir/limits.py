"""Size limits every reader of user input applies before it allocates (frontends, NEFF).

A tensor type whose shape x element size exceeds MAX_TENSOR_BYTES, or whose rank exceeds
MAX_RANK, is refused where it is read (an ONNX input or initializer, an HLO shape, a NEFF
slot), with a one-line error, rather than met later as a MemoryError. The numbers are far
above what the models this toolchain runs need (the bundled runtime is a simulator on the
host's memory).
"""

from __future__ import annotations

import math

MAX_TENSOR_BYTES: int = 1 << 30
"""One tensor: its shape's element count x its element type's size (1 GiB)."""

MAX_RANK: int = 16
"""Dimensions of one tensor."""

MAX_DIM: int = (1 << 31) - 1
"""One dimension (even of an empty tensor)."""


def oversize(shape: tuple[int, ...] | list[int], itemsize: int,
             max_bytes: int | None = MAX_TENSOR_BYTES) -> str | None:
    """Why a tensor of `shape` and element size `itemsize` is refused, or None when it fits
    (dimensions in [0, MAX_DIM]; rank and bytes within the limits). With `max_bytes` None
    the bytes are not bounded here (a file whose own size bounds the tensor)."""
    if len(shape) > MAX_RANK:
        return f"rank {len(shape)} is over the limit of {MAX_RANK}"
    if any(d < 0 for d in shape):
        return f"shape {list(shape)} has a negative dimension"
    if any(d > MAX_DIM for d in shape):
        return f"shape {list(shape)} has a dimension over the limit of {MAX_DIM}"
    nbytes = math.prod(shape) * itemsize
    if max_bytes is not None and nbytes > max_bytes:
        return f"shape {list(shape)} takes {nbytes} bytes, over the limit of {max_bytes}"
    return None
