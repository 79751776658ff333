"""Reading the arrays a user hands `run --inputs` (.npz), with every size bounded first.

numpy preallocates an array from its `.npy` header before reading the data of a zip
member, so a header that claims a huge shape would take that memory. `read_npz` reads
each member's header first and refuses, as NrtError(EXEC_BAD_INPUT) in one line, a member
whose shape x dtype is over `ir.limits.MAX_TENSOR_BYTES` or more than the member holds,
one of Python objects (never unpickled), or a file that is not a readable zip of `.npy`.
"""

from __future__ import annotations

import math
import tokenize
import zipfile
import zlib

import numpy as np
from numpy.lib import format as npy_format

from nxcc.backend.runtime.status import NrtError, NrtStatus
from nxcc.ir.limits import oversize

_READ_ERRORS = (OSError, ValueError, EOFError, SyntaxError, RecursionError, KeyError,
                OverflowError,
                NotImplementedError, zipfile.BadZipFile, zlib.error, tokenize.TokenError)
_HEADERS = {(1, 0): npy_format.read_array_header_1_0, (2, 0): npy_format.read_array_header_2_0,
            (3, 0): npy_format.read_array_header_2_0}


def read_npz(path: str) -> dict[str, np.ndarray]:
    """The arrays of the .npz at `path`, by name (see the module docstring)."""
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                _check_member(archive, info)
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except NrtError:
        raise
    except _READ_ERRORS as exc:
        raise NrtError(NrtStatus.EXEC_BAD_INPUT, f"cannot read inputs {path!r}: "
                       f"{type(exc).__name__}: {exc}") from None


def _check_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
    with archive.open(info) as f:
        version = npy_format.read_magic(f)
        read = _HEADERS.get(version)
        if read is None:
            raise ValueError(f"{info.filename}: unsupported .npy version {version}")
        shape, _, dtype = read(f)
        header = f.tell() if f.seekable() else 0
    if dtype.hasobject:
        raise NrtError(NrtStatus.EXEC_BAD_INPUT, f"input {info.filename!r} holds Python "
                       "objects; only numeric arrays are read")
    problem = oversize(shape, dtype.itemsize)
    if problem is not None:
        raise NrtError(NrtStatus.EXEC_BAD_INPUT, f"input {info.filename!r}: {problem}")
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > info.file_size - header:
        raise NrtError(NrtStatus.EXEC_BAD_INPUT, f"input {info.filename!r} declares "
                       f"{dtype}{list(shape)} ({nbytes} bytes) but holds "
                       f"{info.file_size - header}")
