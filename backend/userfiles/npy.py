"""`.npy` arrays a user gives: the header checked before the array is allocated.

`read_header(f, source, max_bytes)` reads the magic and the header (numpy's own parser of
its Python-literal header, at most MAX_HEADER_BYTES, checked before numpy reads it) and
refuses, as one `UserFileError` line: an unknown version; a dtype that is not numeric
(Python objects, which are never unpickled; structured or sub-array types; strings,
dates); a rank over `ir.limits.MAX_RANK`, a negative dimension or one over `MAX_DIM`, and
more than `max_bytes` bytes (None: bounded by the file alone). `read_data` then reads
exactly the bytes the header declares into a new array, refusing a short read and any
byte after them, and converts a big-endian array to the machine's byte order (always
exact: the same type in the other order). `read_npy(path)` does both for a `.npy` file,
whose size must be the header plus the declared data.
"""

from __future__ import annotations

import math
import tokenize
from dataclasses import dataclass
from typing import IO, Literal

import numpy as np
from numpy.lib import format as npy_format

from nxcc.backend.userfiles.regular import UserFileError, file_size, open_regular
from nxcc.ir.limits import MAX_TENSOR_BYTES, oversize

#: Element kinds read: bool, integers, floats, complex, and plain bytes (numpy stores
#: bfloat16 and other ml_dtypes as raw `V2`/`V1` bytes).
NUMERIC_KINDS = "biufcV"
#: Bytes read from the stream at a time into the array.
CHUNK = 16 << 20
#: The longest `.npy` header read (numpy's own default limit).
MAX_HEADER_BYTES = 10_000

_HEADER_READERS = {(1, 0): npy_format.read_array_header_1_0,
                   (2, 0): npy_format.read_array_header_2_0,
                   (3, 0): npy_format.read_array_header_2_0}
_HEADER_ERRORS = (ValueError, TypeError, SyntaxError, EOFError, RecursionError, KeyError,
                  OverflowError, tokenize.TokenError)


@dataclass(frozen=True)
class NpyHeader:
    """What a `.npy` header declares, and where its data starts (`offset` bytes in)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    fortran: bool
    offset: int

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    @property
    def native_dtype(self) -> np.dtype:
        """The dtype of the array as read: `dtype` in the machine's byte order."""
        return self.dtype if self.dtype.isnative else self.dtype.newbyteorder("=")


def dtype_problem(dtype: np.dtype) -> str | None:
    """Why arrays of `dtype` are not read, or None."""
    if dtype.hasobject:
        return "holds Python objects (never unpickled); only numeric arrays are read"
    if dtype.fields is not None or dtype.subdtype is not None:
        return f"has the structured dtype {dtype.descr}; only numeric arrays are read"
    if dtype.kind not in NUMERIC_KINDS or dtype.itemsize == 0:
        return f"has dtype {dtype.str}, not a numeric type"
    return None


def read_header(f: IO[bytes], source: str, max_bytes: int | None = MAX_TENSOR_BYTES
                ) -> NpyHeader:
    """The checked header of the `.npy` data `f` is positioned at (see the module
    docstring); UserFileError naming `source` otherwise."""
    start = f.tell()
    length = _header_length(f.read(12))
    if length is not None and length > MAX_HEADER_BYTES:  # numpy would first read it all
        raise UserFileError(source, f"its .npy header claims {length} bytes, over the "
                            f"limit of {MAX_HEADER_BYTES}")
    f.seek(start)
    try:
        version = npy_format.read_magic(f)
        read = _HEADER_READERS.get(version)
        if read is None:
            raise UserFileError(source, f"unsupported .npy version {version}")
        shape, fortran, dtype = read(f)
    except _HEADER_ERRORS as exc:  # numpy parses the header's Python literal
        raise UserFileError(source, f"malformed .npy header ({type(exc).__name__}: "
                            f"{_first_line(exc)})") from None
    problem = dtype_problem(dtype)
    if problem is None:
        problem = oversize(shape, dtype.itemsize, max_bytes)
    if problem is not None:
        raise UserFileError(source, problem)
    return NpyHeader(tuple(shape), dtype, bool(fortran), f.tell() - start)


def _header_length(head: bytes) -> int | None:
    """The header length a `.npy` prefix declares (None when it is too short to say)."""
    if len(head) >= 10 and head[6:7] == b"\x01":
        return int.from_bytes(head[8:10], "little")
    if len(head) >= 12:
        return int.from_bytes(head[8:12], "little")
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""


def size_problem(header: NpyHeader, held: int) -> str | None:
    """Why `held` bytes after the header do not match what it declares, or None."""
    if held == header.nbytes:
        return None
    what = "holds only" if held < header.nbytes else "has trailing data: it holds"
    return (f"declares {header.dtype.str}{list(header.shape)} ({header.nbytes} bytes) but "
            f"{what} {held}")


def native(arr: np.ndarray) -> np.ndarray:
    """`arr` in the machine's byte order (the values unchanged)."""
    if arr.dtype.isnative:
        return arr
    return arr.astype(arr.dtype.newbyteorder("="))


def empty(header: NpyHeader, source: str) -> np.ndarray:
    """A new array for `header`'s data (C order, or Fortran's transposed)."""
    shape = header.shape[::-1] if header.fortran else header.shape
    try:
        return np.empty(shape, header.dtype)
    except (ValueError, OverflowError) as exc:  # dimensions numpy cannot index
        raise UserFileError(source, f"shape {list(header.shape)} cannot be allocated "
                            f"({exc})") from None


def read_data(f: IO[bytes], header: NpyHeader, source: str) -> np.ndarray:
    """Exactly the array `header` declares, read from `f` (positioned at its data); the
    stream must end there. UserFileError for a short read or trailing bytes."""
    arr = empty(header, source)
    buf = arr.reshape(-1).view(np.uint8).data if arr.size else memoryview(b"")
    done = 0
    while done < len(buf):
        # files and zip members read into a buffer; typeshed's IO[bytes] does not say so
        n = f.readinto(buf[done:done + CHUNK])  # type: ignore[attr-defined]
        if not n:
            raise UserFileError(source, str(size_problem(header, done)))
        done += n
    if f.read(1):
        raise UserFileError(source, f"has trailing data after the "
                            f"{header.nbytes} bytes its header declares")
    if header.fortran:
        arr = arr.T
    return native(arr)


def read_npy(path: str, max_bytes: int | None = MAX_TENSOR_BYTES,
             mmap: bool = False) -> np.ndarray:
    """The array in the `.npy` file `path` (a regular file whose size is its header plus
    the declared data); with `mmap` a read-only map of a native-order array instead of a
    copy. UserFileError for anything else."""
    with open_regular(path) as f:
        try:
            header = read_header(f, path, max_bytes)
            problem = size_problem(header, file_size(f) - header.offset)
            if problem is not None:
                raise UserFileError(path, problem)
            if not mmap or not header.nbytes or not header.dtype.isnative:
                return read_data(f, header, path)
        except OSError as exc:
            raise UserFileError(path, f"cannot be read ({exc.strerror or exc})") from None
    order: Literal["C", "F"] = "F" if header.fortran else "C"
    return np.memmap(path, header.dtype, "r", header.offset, header.shape, order)
