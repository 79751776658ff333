"""Reading and validating a NEFF file, checking sizes before reading the payload."""

from __future__ import annotations

import dataclasses
import functools
import mmap
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from nxcc.backend.neff.constants import BUILD_VERSION_PREFIX, HEADER_SIZE, MANIFEST_NAME
from nxcc.backend.neff.digest import field_of, new_hasher
from nxcc.backend.neff.errors import FOREIGN, SIZE, NeffError
from nxcc.backend.neff.header import NeffHeader
from nxcc.backend.neff.json_schema import load_json
from nxcc.backend.neff.limits import MAX_PAYLOAD_BYTES
from nxcc.backend.neff.mapped import MappedMembers
from nxcc.backend.neff.neuronx_payload import describe, is_real_payload, summary
from nxcc.backend.neff.payload import GZIP_MAGIC, is_gzip, read_payload, tar_spans
from nxcc.backend.neff.survey import Survey, survey

_HASH_PREFIX_CHARS: int = 12


@dataclasses.dataclass(frozen=True)
class NeffFile:
    """A decoded NEFF.

    ``files`` holds every payload member except ``neff.json`` (which is ``manifest``): a
    dict for a gzipped payload, a `MappedMembers` reading a plain one in place from a map of
    the file (whose `.npy` weights can then be viewed without a copy). ``hash_ok`` says
    whether the payload's hash (MD5 in the real tool's encoding; SHA-256 in NEFFs of nxcc
    0.2: see `digest`) matches the header; it is computed on first use (the whole payload
    is read then, streaming from the map), and refused at once by
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
    """Read and validate the NEFF at ``path``, one nxcc compiled (of this version or 0.2).

    Checks, in order, raising :class:`NeffError` (message prefixed with ``path``):
    the file opens; it is at least 1024 bytes; the header is valid (see
    :meth:`NeffHeader.unpack`); ``1024 + data_size`` equals the file size (shorter
    is "truncated", longer is "trailing bytes"); a NEFF whose header does not name nxcc
    is surveyed (`survey`), and one the real compiler built is refused with code
    ``FOREIGN``, saying what it is; the payload hash matches when ``validate_hash``; the
    payload is a safe tar, gzipped or not (told by its magic number; see
    :func:`read_payload`); it contains ``neff.json`` holding a JSON object. The payload is
    only read after the size checks pass. An uncompressed payload is not read at all: the
    file is mapped read-only and only the tar headers, the manifest and what the caller
    asks for are touched.
    """
    source = os.fspath(path)
    with _open(source) as handle:
        header = read_header(handle, source)
        if not header.build_version.startswith(BUILD_VERSION_PREFIX):
            refuse_foreign(survey(handle, header, source))
            handle.seek(HEADER_SIZE)
        if is_gzip(handle.read(len(GZIP_MAGIC))):
            handle.seek(HEADER_SIZE)
            gzipped, digest = _read_gzipped(handle, header, source, validate_hash)
            members: dict[str, bytes] | MappedMembers = gzipped
        else:
            handle.seek(HEADER_SIZE)
            members, digest = _map_plain(handle, header, source, validate_hash)
    manifest = _parse_manifest(members.get(MANIFEST_NAME), source)
    if isinstance(members, dict):
        del members[MANIFEST_NAME]
    else:
        members = members.without(MANIFEST_NAME)
    return NeffFile(path=Path(source), header=header, manifest=manifest, files=members,
                    digest=digest)


def survey_neff(path: str | os.PathLike[str]) -> Survey:
    """The header and a `Survey` of the payload of the NEFF at `path`, whoever built it
    (NeffError as `read_neff` for what is wrong with the file itself)."""
    source = os.fspath(path)
    with _open(source) as handle:
        return survey(handle, read_header(handle, source), source)


def refuse_foreign(found: Survey) -> None:
    """NeffError (code ``FOREIGN``) when `found` is a payload the real compiler built: one
    line saying who built it, for what, and that it runs only on Neuron hardware."""
    if not is_real_payload(found):
        return
    try:
        what = summary(describe(found))
    except NeffError:  # damaged or inconsistent: still say what it is
        what = "neuronx-cc"
    raise NeffError(found.path, f"NEFF built by {what}: its engine programs run only on "
                    "Neuron hardware; nxcc runs NEFFs nxcc compiled (inspect-neff shows what "
                    "it holds)", code=FOREIGN)


def read_header(handle: BinaryIO, source: str) -> NeffHeader:
    """The header of the NEFF open as `handle` (left at the payload's start), its payload
    size checked against the file's."""
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
    return header


def _check_digest(digest: bytes, header: NeffHeader, source: str) -> None:
    if digest != header.hash:
        raise NeffError(
            source,
            f"payload hash mismatch: header says {header.hash.hex()[:_HASH_PREFIX_CHARS]}..., "
            f"payload is {digest.hex()[:_HASH_PREFIX_CHARS]}...",
        )


def _read_gzipped(handle: BinaryIO, header: NeffHeader, source: str, validate_hash: bool
                  ) -> tuple[dict[str, bytes], Callable[[], bytes]]:
    """The members of a gzip payload (read whole, then gunzipped)."""
    payload = handle.read(header.data_size)
    if len(payload) != header.data_size:
        raise NeffError(
            source,
            f"truncated: header says {header.data_size} payload bytes, read only {len(payload)}",
        )
    hasher = new_hasher(header.hash_algorithm)
    hasher.update(payload)
    digest = field_of(header.hash_algorithm, hasher, header.hash)
    if validate_hash:
        _check_digest(digest, header, source)
    return read_payload(payload, source), lambda: digest


def _map_plain(handle: BinaryIO, header: NeffHeader, source: str, validate_hash: bool
               ) -> tuple[MappedMembers, Callable[[], bytes]]:
    """The members of a plain tar payload, in place in a map of the file; the hash (when
    validated) streams over the map before the tar is parsed."""
    if header.data_size > MAX_PAYLOAD_BYTES:
        raise NeffError(source, f"payload of {header.data_size} bytes is over the limit of "
                        f"{MAX_PAYLOAD_BYTES}", code=SIZE)
    try:
        buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        raise NeffError(source, f"cannot map the file: {exc}") from exc
    end = HEADER_SIZE + header.data_size

    def digest() -> bytes:
        hasher = new_hasher(header.hash_algorithm)
        with memoryview(buffer) as view:
            hasher.update(view[HEADER_SIZE:end])
        return field_of(header.hash_algorithm, hasher, header.hash)

    if validate_hash:
        _check_digest(digest(), header, source)
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
