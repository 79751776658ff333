"""Reading and validating a NEFF file, checking sizes before reading the payload."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import mmap
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from nxcc.backend.neff.constants import HEADER_SIZE, MANIFEST_NAME, FeatureBits
from nxcc.backend.neff.errors import SIZE, NeffError
from nxcc.backend.neff.header import NeffHeader
from nxcc.backend.neff.json_schema import load_json
from nxcc.backend.neff.limits import MAX_PAYLOAD_BYTES
from nxcc.backend.neff.mapped import MappedMembers
from nxcc.backend.neff.payload import is_gzip, read_payload, tar_spans

_HASH_PREFIX_CHARS: int = 12


@dataclasses.dataclass(frozen=True)
class NeffFile:
    """A decoded NEFF.

    ``files`` holds every payload member except ``neff.json`` (which is ``manifest``): a
    dict for a gzipped payload, a `MappedMembers` reading a plain one in place from a map of
    the file (whose `.npy` weights can then be viewed without a copy). ``hash_ok`` says
    whether the payload SHA-256 matches the header; it is computed on first use (the whole
    payload is read then, streaming from the map), and refused at once by
    ``read_neff(validate_hash=True)``.
    """

    path: Path
    header: NeffHeader
    manifest: dict[str, Any]
    files: Mapping[str, bytes]
    digest: Callable[[], bytes] = dataclasses.field(repr=False, compare=False)

    @functools.cached_property
    def hash_ok(self) -> bool:
        return self.digest() == self.header.hash


def read_neff(path: str | os.PathLike[str], *, validate_hash: bool = False) -> NeffFile:
    """Read and validate the NEFF at ``path``.

    Checks, in order, raising :class:`NeffError` (message prefixed with ``path``):
    the file opens; it is at least 1024 bytes; the header is valid (see
    :meth:`NeffHeader.unpack`); ``1024 + data_size`` equals the file size (shorter
    is "truncated", longer is "trailing bytes"); the payload hash matches when
    ``validate_hash``; the compression flag agrees with the payload; the payload is
    a safe tar (see :func:`read_payload`); it contains ``neff.json`` holding a JSON
    object. The payload is only read after the size checks pass. An uncompressed payload
    is not read at all: the file is mapped read-only and only the tar headers, the
    manifest and what the caller asks for are touched.
    """
    source = os.fspath(path)
    with _open(source) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size < HEADER_SIZE:
            raise NeffError(
                source, f"not a NEFF: {size} bytes, shorter than the {HEADER_SIZE}-byte header"
            )
        header = NeffHeader.unpack(handle.read(HEADER_SIZE), source)
        expected = HEADER_SIZE + header.data_size
        if expected > size:
            raise NeffError(
                source,
                f"truncated: header says {header.data_size} payload bytes, "
                f"file has {size - HEADER_SIZE}",
            )
        if expected < size:
            raise NeffError(
                source,
                f"trailing bytes: {size - expected} bytes after the "
                f"{header.data_size}-byte payload",
            )
        if header.feature_bits & FeatureBits.UNCOMPRESSED_PAYLOAD:
            members, digest = _map_plain(handle, header, source, validate_hash)
        else:
            members, digest = _read_gzipped(handle, header, source, validate_hash)
    manifest = _parse_manifest(members.get(MANIFEST_NAME), source)
    if isinstance(members, dict):
        del members[MANIFEST_NAME]
    else:
        members = members.without(MANIFEST_NAME)
    return NeffFile(path=Path(source), header=header, manifest=manifest, files=members,
                    digest=digest)


def _check_digest(digest: bytes, header: NeffHeader, source: str) -> None:
    if digest != header.hash:
        raise NeffError(
            source,
            f"payload hash mismatch: header says {header.hash.hex()[:_HASH_PREFIX_CHARS]}..., "
            f"payload is {digest.hex()[:_HASH_PREFIX_CHARS]}...",
        )


def _read_gzipped(handle: BinaryIO, header: NeffHeader, source: str, validate_hash: bool
                  ) -> tuple[dict[str, bytes], Callable[[], bytes]]:
    """The members of a payload flagged as compressed (read whole, then gunzipped)."""
    payload = handle.read(header.data_size)
    if len(payload) != header.data_size:
        raise NeffError(
            source,
            f"truncated: header says {header.data_size} payload bytes, read only {len(payload)}",
        )
    digest = hashlib.sha256(payload).digest()
    if validate_hash:
        _check_digest(digest, header, source)
    if not is_gzip(payload):
        raise NeffError(source, "header flags the payload as compressed but it is not gzip")
    return read_payload(payload, source), lambda: digest


def _map_plain(handle: BinaryIO, header: NeffHeader, source: str, validate_hash: bool
               ) -> tuple[MappedMembers, Callable[[], bytes]]:
    """The members of a payload flagged as uncompressed, in place in a map of the file;
    the hash (when validated) streams over the map before the tar is parsed."""
    if header.data_size > MAX_PAYLOAD_BYTES:
        raise NeffError(source, f"payload of {header.data_size} bytes is over the limit of "
                        f"{MAX_PAYLOAD_BYTES}", code=SIZE)
    try:
        buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        raise NeffError(source, f"cannot map the file: {exc}") from exc
    end = HEADER_SIZE + header.data_size

    def digest() -> bytes:
        with memoryview(buffer) as view:
            return hashlib.sha256(view[HEADER_SIZE:end]).digest()

    if validate_hash:
        _check_digest(digest(), header, source)
    if is_gzip(buffer[HEADER_SIZE:HEADER_SIZE + 2]):
        raise NeffError(source, "header flags the payload as uncompressed but it is gzip")
    handle.seek(HEADER_SIZE)
    return MappedMembers(buffer, tar_spans(handle, end, source)), digest


def _open(source: str) -> BinaryIO:
    """Open ``source`` for binary reading, turning OS errors into NeffError."""
    try:
        return open(source, "rb")  # closed by the caller's with-block
    except FileNotFoundError as exc:
        raise NeffError(source, "no such file") from exc
    except IsADirectoryError as exc:
        raise NeffError(source, "is a directory, not a NEFF file") from exc
    except PermissionError as exc:
        raise NeffError(source, "permission denied") from exc
    except OSError as exc:
        raise NeffError(source, f"cannot open: {exc.strerror or exc}") from exc


def _parse_manifest(raw: bytes | None, source: str) -> dict[str, Any]:
    """Decode ``neff.json`` bytes into a dict, or raise NeffError."""
    if raw is None:
        raise NeffError(source, f"payload has no {MANIFEST_NAME}")
    manifest = load_json(raw, source, MANIFEST_NAME)
    if not isinstance(manifest, dict):
        raise NeffError(
            source, f"{MANIFEST_NAME} must hold a JSON object, got {type(manifest).__name__}"
        )
    return manifest
