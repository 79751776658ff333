"""Weights stored in a NEFF payload as ``.npy`` bytes (never pickled)."""

from __future__ import annotations

import io
import tokenize

import numpy as np
from numpy.lib import format as npy_format

from nxcc.backend.neff.errors import NeffError

NPY_MAGIC: bytes = b"\x93NUMPY"


def dump_npy(arr: np.ndarray) -> bytes:
    """Serialize ``arr`` as ``.npy`` bytes; raises ValueError for object arrays."""
    buf = io.BytesIO()
    np.save(buf, np.asarray(arr), allow_pickle=False)
    return buf.getvalue()


def npy_parts(arr: np.ndarray) -> tuple[bytes, memoryview]:
    """``arr`` as ``.npy`` contents in two parts, the header and a view of the data (C
    order; nothing copied when ``arr`` is C-contiguous). numpy pads the header to a multiple
    of 64 bytes, so in a NEFF's tar, where a member's data starts on a 512-byte block, the
    array's data is 64-byte aligned and a reader can map it. ValueError for object arrays."""
    arr = np.asarray(arr)
    if arr.dtype.hasobject:
        raise ValueError("object arrays cannot be saved without pickling")
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    head = io.BytesIO()
    npy_format.write_array_header_1_0(head, npy_format.header_data_from_array_1_0(arr))
    return head.getvalue(), arr.reshape(-1).view(np.uint8).data


def load_npy(data: bytes, source: str = "<npy>") -> np.ndarray:
    """Parse ``.npy`` bytes without ever unpickling.

    Raises :class:`NeffError` naming ``source`` (e.g. ``"model.neff:weights/w0.npy"``)
    when the data is not a well-formed ``.npy`` array.
    """
    if data[: len(NPY_MAGIC)] != NPY_MAGIC:
        raise NeffError(source, "malformed .npy: bad magic")
    try:
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError, SyntaxError, RecursionError, OverflowError,
            tokenize.TokenError) as exc:  # numpy tokenizes the header's Python literal
        raise NeffError(source, f"malformed .npy: {exc}") from exc
    if not isinstance(arr, np.ndarray):  # pragma: no cover - magic check excludes .npz
        raise NeffError(source, f"malformed .npy: got {type(arr).__name__}")
    return arr
