"""Reading and validating a NEFF file, checking sizes before reading the payload."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path
from typing import Any, BinaryIO

from nxcc.backend.neff.constants import HEADER_SIZE, MANIFEST_NAME, FeatureBits
from nxcc.backend.neff.errors import NeffError
from nxcc.backend.neff.header import NeffHeader
from nxcc.backend.neff.payload import is_gzip, read_payload
from nxcc.backend.neff.schema import load_json

_HASH_PREFIX_CHARS: int = 12


@dataclasses.dataclass(frozen=True)
class NeffFile:
    """A decoded NEFF.

    ``files`` holds every payload member except ``neff.json`` (which is
    ``manifest``). ``hash_ok`` says whether the payload SHA-256 matches the header;
    it is always computed, but only refused by ``read_neff(validate_hash=True)``.
    """

    path: Path
    header: NeffHeader
    manifest: dict[str, Any]
    files: dict[str, bytes]
    hash_ok: bool | None


def read_neff(path: str | os.PathLike[str], *, validate_hash: bool = False) -> NeffFile:
    """Read and validate the NEFF at ``path``.

    Checks, in order, raising :class:`NeffError` (message prefixed with ``path``):
    the file opens; it is at least 1024 bytes; the header is valid (see
    :meth:`NeffHeader.unpack`); ``1024 + data_size`` equals the file size (shorter
    is "truncated", longer is "trailing bytes"); the payload hash matches when
    ``validate_hash``; the compression flag agrees with the payload; the payload is
    a safe tar (see :func:`read_payload`); it contains ``neff.json`` holding a JSON
    object. The payload is only read after the size checks pass.
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
        payload = handle.read(header.data_size)
    if len(payload) != header.data_size:
        raise NeffError(
            source,
            f"truncated: header says {header.data_size} payload bytes, read only {len(payload)}",
        )

    digest = hashlib.sha256(payload).digest()
    hash_ok = digest == header.hash
    if validate_hash and not hash_ok:
        raise NeffError(
            source,
            f"payload hash mismatch: header says {header.hash.hex()[:_HASH_PREFIX_CHARS]}..., "
            f"payload is {digest.hex()[:_HASH_PREFIX_CHARS]}...",
        )
    flagged_plain = bool(header.feature_bits & FeatureBits.UNCOMPRESSED_PAYLOAD)
    if flagged_plain and is_gzip(payload):
        raise NeffError(source, "header flags the payload as uncompressed but it is gzip")
    if not flagged_plain and not is_gzip(payload):
        raise NeffError(source, "header flags the payload as compressed but it is not gzip")

    members = read_payload(payload, source)
    manifest = _parse_manifest(members.pop(MANIFEST_NAME, None), source)
    return NeffFile(
        path=Path(source), header=header, manifest=manifest, files=members, hash_ok=hash_ok
    )


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
