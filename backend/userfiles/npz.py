"""`.npz` archives a user gives, read member by member through a bounded reader.

`NpzArchive(path)` (a context manager) reads the zip's central directory (Python's
`zipfile`) and refuses the whole file, as one `UserFileError` line, before any array is
allocated when:

- it is not a regular file or not a zip archive, or bytes follow its end record;
- a member is encrypted, or compressed other than stored or deflated (numpy writes those
  two; bzip2 and LZMA have no bound on what a few bytes expand to);
- two members have the same name, a member is not a `.npy` file, or members overlap (the
  local header and data of each lie apart from every other's, before the central
  directory);
- a member's `.npy` header fails `npy.read_header`, or the central directory's size for
  it is not exactly the header plus the declared data.

`headers` then maps each array's name (the member name without `.npy`) to its header, so a
caller can check names, shapes and dtypes against what it expects; `read(name)` reads one
array (at most its declared bytes are decompressed: deflate's output is bounded per call,
and the CRC is checked at the end). `read_npz(path)` reads every array.

`write_npz(f, arrays)` writes what np.savez writes, whatever the arrays' names.
"""

from __future__ import annotations

import os
import struct
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import IO, BinaryIO

import numpy as np
from numpy.lib import format as npy_format

from nxcc.backend.userfiles.npy import NpyHeader, read_data, read_header, size_problem
from nxcc.backend.userfiles.regular import UserFileError, file_size, open_regular
from nxcc.ir.limits import MAX_TENSOR_BYTES

#: Compression methods read: stored (np.savez) and deflated (np.savez_compressed).
METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
_METHOD_NAMES = {zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "LZMA"}
_LOCAL = struct.Struct("<4s5H3L2H")  # a zip local file header (30 bytes)
_END = struct.Struct("<4s4H2LH")  # the end of central directory record (22 bytes)
_READ_ERRORS = (OSError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError,
                RuntimeError, ValueError, struct.error, OverflowError)


class NpzArchive:
    """An open `.npz` whose members passed the checks of the module docstring."""

    def __init__(self, path: str, max_bytes: int | None = MAX_TENSOR_BYTES) -> None:
        self.path = path
        self._file: BinaryIO = open_regular(path)
        try:
            self._zip = self._open_zip()
            self.headers: dict[str, NpyHeader] = self._check_members(max_bytes)
        except UserFileError:
            self.close()
            raise
        except _READ_ERRORS as exc:
            self.close()
            raise UserFileError(path, f"cannot be read as .npz ({type(exc).__name__}: "
                                f"{str(exc)[:200]})") from None

    def _open_zip(self) -> zipfile.ZipFile:
        archive = zipfile.ZipFile(self._file)
        size = file_size(self._file)
        end = size - _END.size - len(archive.comment)
        self._file.seek(max(end, 0))
        record = self._file.read(_END.size)
        if end < 0 or record[:4] != b"PK\x05\x06":
            raise UserFileError(self.path, "has trailing data after the end of its zip "
                                "archive")
        self._end_of_members = archive.start_dir
        return archive

    def _check_members(self, max_bytes: int | None) -> dict[str, NpyHeader]:
        infos = self._zip.infolist()
        names = [i.filename for i in infos]
        seen: set[str] = set()
        for name in names:
            if name in seen:
                raise UserFileError(self.path, f"holds two members named {name!r} (which "
                                    "one is meant is ambiguous)")
            seen.add(name)
        spans = []
        for info in infos:
            self._check_entry(info)
            spans.append(self._span(info))
        spans.sort()
        for (_, end, name), (nxt, _, other) in zip(spans, spans[1:], strict=False):
            if end > nxt:
                raise UserFileError(self.path, f"members {name!r} and {other!r} overlap")
        if spans and spans[-1][1] > self._end_of_members:
            raise UserFileError(self.path, f"member {spans[-1][2]!r} runs into the central "
                                "directory")
        headers = {}
        for info in infos:
            source = f"{self.path}:{info.filename}"
            with self._zip.open(info) as f:
                header = read_header(f, source, max_bytes)
            problem = size_problem(header, info.file_size - header.offset)
            if problem is not None:
                raise UserFileError(source, problem)
            headers[info.filename[:-len(".npy")]] = header
        return headers

    def _check_entry(self, info: zipfile.ZipInfo) -> None:
        source = f"{self.path}:{info.filename}"
        if info.flag_bits & 0x1:
            raise UserFileError(source, "is encrypted")
        if info.compress_type not in METHODS:
            method = _METHOD_NAMES.get(info.compress_type, f"method {info.compress_type}")
            raise UserFileError(source, f"is compressed with {method}; only stored and "
                                "deflated members are read")
        if not info.filename.endswith(".npy") or info.is_dir():
            raise UserFileError(source, "is not a .npy array")
        if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
            raise UserFileError(source, f"a stored member of {info.file_size} bytes "
                                f"declares {info.compress_size} compressed")

    def _span(self, info: zipfile.ZipInfo) -> tuple[int, int, str]:
        """(start, end, name) of the member's local header and data in the file."""
        self._file.seek(info.header_offset)
        local = self._file.read(_LOCAL.size)
        if len(local) != _LOCAL.size or local[:4] != b"PK\x03\x04":
            raise UserFileError(f"{self.path}:{info.filename}", "its local header is missing")
        name_len, extra_len = _LOCAL.unpack(local)[-2:]
        end = info.header_offset + _LOCAL.size + name_len + extra_len + info.compress_size
        return info.header_offset, end, info.filename

    def read(self, name: str) -> np.ndarray:
        """The array `name` (a key of `headers`)."""
        member = f"{name}.npy"
        source = f"{self.path}:{member}"
        try:
            with self._zip.open(member) as f:
                header = read_header(f, source, None)
                if header != self.headers.get(name):
                    raise UserFileError(source, "changed while it was read")
                return read_data(f, header, source)
        except _READ_ERRORS as exc:
            raise UserFileError(source, f"cannot be read ({type(exc).__name__}: "
                                f"{str(exc)[:200]})") from None

    def arrays(self) -> Iterator[tuple[str, np.ndarray]]:
        for name in self.headers:
            yield name, self.read(name)

    def close(self) -> None:
        zf = getattr(self, "_zip", None)
        if zf is not None:
            zf.close()
        self._file.close()

    def __enter__(self) -> NpzArchive:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def read_npz(path: str | os.PathLike[str], max_bytes: int | None = MAX_TENSOR_BYTES
             ) -> dict[str, np.ndarray]:
    """Every array of the `.npz` at `path` by name (see the module docstring)."""
    with NpzArchive(os.fspath(path), max_bytes) as archive:
        return dict(archive.arrays())


def write_npz(f: IO[bytes], arrays: Mapping[str, np.ndarray]) -> None:
    """`arrays` as an uncompressed `.npz` (the archive np.savez writes) into the binary file
    `f`, each under its own name: np.savez would take a name such as `file` or
    `allow_pickle` for its own parameter."""
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, arr in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                npy_format.write_array(member, np.asanyarray(arr), allow_pickle=False)
