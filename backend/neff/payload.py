"""The NEFF payload: a deterministic tar archive of named files, optionally gzipped."""

from __future__ import annotations

import gzip
import io
import tarfile
import zlib
from collections.abc import Container, Mapping
from typing import BinaryIO

from nxcc.backend.neff.errors import SIZE, NeffError
from nxcc.backend.neff.limits import MAX_PAYLOAD_BYTES

GZIP_MAGIC: bytes = b"\x1f\x8b"
_FILE_MODE: int = 0o644
_GZIP_LEVEL: int = 6


def is_gzip(data: bytes) -> bool:
    """True when ``data`` starts with the gzip magic number."""
    return data[:2] == GZIP_MAGIC


def unsafe_member_reason(name: str) -> str | None:
    """Return why ``name`` is not an acceptable payload path, or None if it is.

    Acceptable: a non-empty relative POSIX path with no ``..``, ``.`` or empty
    components and no backslash (e.g. ``sg00/program.json``).
    """
    if not name:
        return "empty name"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "absolute path"
    if "\\" in name:
        return "backslash in path"
    parts = name.split("/")
    if ".." in parts:
        return "path traversal ('..')"
    if any(part in ("", ".") for part in parts):
        return "non-canonical path"
    return None


Contents = bytes | bytearray | memoryview | tuple
"""A member's contents: bytes-like, or a tuple of bytes-like parts written one after another
(a `.npy` header and a view of the array's data, never joined)."""

_NUL_BLOCK = bytes(tarfile.BLOCKSIZE)


def _parts(name: str, contents: Contents) -> tuple[memoryview, ...]:
    parts = contents if isinstance(contents, tuple) else (contents,)
    out = []
    for part in parts:
        if not isinstance(part, bytes | bytearray | memoryview):
            raise TypeError(f"payload member {name!r}: contents must be bytes, "
                            f"got {type(part).__name__}")
        out.append(memoryview(part).cast("B"))
    return tuple(out)


def payload_chunks(files: Mapping[str, Contents]) -> list[bytes | memoryview]:
    """The tar archive holding ``files`` (path -> contents) as a list of chunks to write
    one after another (the member data is not copied): exactly the bytes `tarfile` writes
    in PAX format for the same members (sorted names, regular files, mtime 0, uid/gid 0,
    empty owner names, mode 0o644), so every member's data starts on a 512-byte block.
    Raises ValueError for an unsafe name (see :func:`unsafe_member_reason`) and
    TypeError for contents that are not bytes-like.
    """
    chunks: list[bytes | memoryview] = []
    offset = 0
    for name in sorted(files):
        reason = unsafe_member_reason(name)
        if reason is not None:
            raise ValueError(f"payload member {name!r}: {reason}")
        parts = _parts(name, files[name])
        info = tarfile.TarInfo(name)
        info.size = sum(p.nbytes for p in parts)
        info.mtime = 0
        info.mode = _FILE_MODE
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.type = tarfile.REGTYPE
        head = info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
        pad = -info.size % tarfile.BLOCKSIZE
        chunks += [head, *parts, _NUL_BLOCK[:pad]]
        offset += len(head) + info.size + pad
    offset += 2 * tarfile.BLOCKSIZE
    chunks.append(bytes(2 * tarfile.BLOCKSIZE + (-offset % tarfile.RECORDSIZE)))
    return chunks


def build_payload(files: Mapping[str, Contents], compress: bool) -> bytes:
    """Return a tar archive holding ``files`` (`payload_chunks` joined), gzipped if
    ``compress`` (gzip mtime 0): byte-for-byte reproducible."""
    raw = b"".join(payload_chunks(files))
    if not compress:
        return raw
    return gzip.compress(raw, compresslevel=_GZIP_LEVEL, mtime=0)


def check_member(member: tarfile.TarInfo, seen: Container[str], source: str) -> None:
    """NeffError unless `member` is a regular file at a safe path not seen before."""
    reason = unsafe_member_reason(member.name)
    if reason is not None:
        raise NeffError(source, f"payload member {member.name!r}: {reason}")
    if not member.isreg():
        raise NeffError(source, f"payload member {member.name!r} is not a regular file")
    if member.name in seen:
        raise NeffError(source, f"payload member {member.name!r} appears twice")


def tar_spans(handle: BinaryIO, end: int, source: str) -> dict[str, tuple[int, int]]:
    """Each member's (offset, size) in `handle`'s file, read from the tar headers starting
    at its current position (the data is skipped, not read); NeffError as `read_payload`,
    or when a member's data would run past `end`."""
    spans: dict[str, tuple[int, int]] = {}
    try:
        with tarfile.open(fileobj=handle, mode="r:") as tar:
            for member in tar:
                check_member(member, spans, source)
                if member.offset_data + member.size > end:
                    raise NeffError(source, f"payload member {member.name!r} truncated: "
                                    f"{max(0, end - member.offset_data)} of {member.size} "
                                    "bytes")
                spans[member.name] = (member.offset_data, member.size)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise NeffError(source, f"corrupt tar payload: {exc}") from exc
    return spans


def _gunzip(data: bytes, source: str) -> bytes:
    """One gzip member, refused once it inflates past MAX_PAYLOAD_BYTES (a gzip bomb stops
    there, before the memory is taken)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, MAX_PAYLOAD_BYTES + 1)
    except zlib.error as exc:
        raise NeffError(source, f"corrupt gzip payload: {exc}") from exc
    if len(out) > MAX_PAYLOAD_BYTES or inflater.unconsumed_tail:
        raise NeffError(source, f"gzip payload inflates past the limit of {MAX_PAYLOAD_BYTES} "
                        "bytes", code=SIZE)
    if not inflater.eof:
        raise NeffError(source, "corrupt gzip payload: the stream ends early")
    if inflater.unused_data:
        raise NeffError(source, f"corrupt gzip payload: {len(inflater.unused_data)} bytes "
                        "after the gzip stream")
    return out


def read_payload(data: bytes, source: str) -> dict[str, bytes]:
    """Decode a payload built by :func:`build_payload` into ``{path: contents}``.

    Gzip is detected by its magic number. Raises :class:`NeffError` naming
    ``source`` for a corrupt gzip stream or tar archive, a member that is not a
    regular file, an unsafe member path, or a duplicated member name.
    """
    if is_gzip(data):
        data = _gunzip(data, source)
    elif len(data) > MAX_PAYLOAD_BYTES:
        raise NeffError(source, f"payload of {len(data)} bytes is over the limit of "
                        f"{MAX_PAYLOAD_BYTES}", code=SIZE)
    files: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            for member in tar:
                check_member(member, files, source)
                handle = tar.extractfile(member)
                if handle is None:  # pragma: no cover - isreg() guarantees a handle
                    raise NeffError(source, f"payload member {member.name!r} has no data")
                contents = handle.read()
                if len(contents) != member.size:
                    raise NeffError(
                        source,
                        f"payload member {member.name!r} truncated: "
                        f"{len(contents)} of {member.size} bytes",
                    )
                files[member.name] = contents
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise NeffError(source, f"corrupt tar payload: {exc}") from exc
    return files
