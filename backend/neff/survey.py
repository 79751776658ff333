"""One streaming pass over a NEFF's payload: every member's name and size, the small JSON
members' text, each `.npy`'s dtype and shape, and the payload hash, in bounded memory.

This is how a NEFF of any producer and any size is looked at (`inspect-neff`, and telling a
NEFF another compiler built from one nxcc can run): the payload is read once, from the file,
through the hash; gzip or a plain tar is told by its magic number; member data is skipped
unless it is a JSON member of at most `MAX_TEXT_BYTES`, a `.npy` header, or an engine's
assembly debug info (to count its instructions).

When the payload cannot be decoded, the hash decides what that means: a payload that
matches its header's hash and still does not decode is an inconsistent file (refused, one
line); one that does not match is damaged, and the survey says so (`payload_error`) with
what it read before the damage.
"""

from __future__ import annotations

import dataclasses
import os
import tarfile
import tokenize
import zlib
from typing import BinaryIO

from numpy.lib import format as npy_format

from nxcc.backend.neff.digest import Hasher, field_of, new_hasher
from nxcc.backend.neff.errors import SIZE, NeffError
from nxcc.backend.neff.header import NeffHeader
from nxcc.backend.neff.payload import GZIP_MAGIC, unsafe_member_reason

MAX_TEXT_BYTES: int = 16 << 20
"""A JSON member (or assembly debug info) larger than this is listed, not read."""
MAX_TEXT_TOTAL: int = 256 << 20
"""The members read, together, besides the `ESSENTIAL` ones; once there, the rest are
listed, not read (engines' descriptor tables can be large)."""
MAX_ESSENTIAL_TOTAL: int = 1 << 30
"""The `ESSENTIAL` members read, together."""
ESSENTIAL = frozenset({"neff.json", "info.json", "hlo_stats.json", "def.json",
                       "tensor_map.json"})
"""Members (by base name, and every `kelf-N.json`) that say what the NEFF is."""
MAX_INFLATED_BYTES: int = 64 << 30
"""The members of a gzip payload, together (a gzip bomb stops here)."""
MAX_MEMBERS: int = 1 << 20
_CHUNK: int = 1 << 20
ASM_DEBUG_MARK: str = "debug_info_asm_"


@dataclasses.dataclass(frozen=True)
class NpyHeader:
    """What a `.npy` member's header says."""

    dtype: str
    shape: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Survey:
    """A payload, looked at once.

    ``members`` maps each regular file to its size, in archive order; ``others`` names the
    entries that are not regular files (directories, links: listed, never read);
    ``texts`` holds the JSON members and assembly debug info that were read; ``npy`` the
    header of each `.npy`; ``payload_hash`` is the payload's hash in the header's encoding
    (``header.hash_algorithm``); ``payload_error`` says why a damaged payload stopped
    decoding (None when it decoded).
    """

    path: str
    header: NeffHeader
    compressed: bool
    members: dict[str, int]
    others: list[str]
    texts: dict[str, bytes]
    npy: dict[str, NpyHeader]
    payload_hash: bytes
    payload_error: str | None = None

    @property
    def hash_ok(self) -> bool:
        return self.payload_hash == self.header.hash


class _HashedPayload:
    """The payload's bytes of an open NEFF, hashed as they are read, never past its end."""

    def __init__(self, handle: BinaryIO, size: int, hasher: Hasher) -> None:
        self._handle, self._left, self._hasher = handle, size, hasher

    def read(self, n: int = -1) -> bytes:
        n = self._left if n < 0 else min(n, self._left)
        data = self._handle.read(n)
        self._hasher.update(data)
        self._left -= len(data)
        return data

    def drain(self) -> None:
        while self._left and self.read(_CHUNK):
            pass


def survey(handle: BinaryIO, header: NeffHeader, source: str) -> Survey:
    """Survey the payload of the NEFF open as `handle` (its header already read and its
    size checked against the file): see the module's docstring. NeffError for an unsafe
    member name, too many members, a gzip payload inflating past `MAX_INFLATED_BYTES`, or a
    payload that matches its hash and does not decode."""
    start = handle.tell()
    compressed = handle.read(len(GZIP_MAGIC)) == GZIP_MAGIC
    handle.seek(start)
    hasher = new_hasher(header.hash_algorithm)
    payload = _HashedPayload(handle, header.data_size, hasher)
    found = _Found()
    error: str | None = None
    try:
        with tarfile.open(fileobj=payload,  # type: ignore[call-overload]
                          mode="r|gz" if compressed else "r|") as tar:
            for member in tar:
                found.add(tar, member, source, compressed)
    except (tarfile.TarError, zlib.error, EOFError, OSError, ValueError) as exc:
        error = " ".join(str(exc).split()) or type(exc).__name__
    payload.drain()
    digest = field_of(header.hash_algorithm, hasher, header.hash)
    if error is not None and digest == header.hash:
        raise NeffError(source, f"corrupt tar payload: {error}")
    return Survey(path=source, header=header, compressed=compressed, members=found.sizes,
                  others=found.others, texts=found.texts, npy=found.npy,
                  payload_hash=digest, payload_error=error)


class _Found:
    """What the pass has collected so far."""

    def __init__(self) -> None:
        self.sizes: dict[str, int] = {}
        self.others: list[str] = []
        self.texts: dict[str, bytes] = {}
        self.npy: dict[str, NpyHeader] = {}
        self.inflated = 0
        self.read = {True: 0, False: 0}  # bytes read, of essential members and of others

    def add(self, tar: tarfile.TarFile, member: tarfile.TarInfo, source: str,
            compressed: bool) -> None:
        name = member.name.rstrip("/") if member.isdir() else member.name
        reason = unsafe_member_reason(name)
        if reason is not None:
            raise NeffError(source, f"payload member {member.name!r}: {reason}")
        if len(self.sizes) + len(self.others) >= MAX_MEMBERS:
            raise NeffError(source, f"payload has more than {MAX_MEMBERS} members", code=SIZE)
        if not member.isreg():
            self.others.append(name)
            return
        if name in self.sizes:
            raise NeffError(source, f"payload member {name!r} appears twice")
        self.sizes[name] = member.size
        self.inflated += member.size
        if compressed and self.inflated > MAX_INFLATED_BYTES:
            raise NeffError(source, f"gzip payload inflates past the limit of "
                            f"{MAX_INFLATED_BYTES} bytes", code=SIZE)
        base = os.path.basename(name)
        essential = base in ESSENTIAL or (base.startswith("kelf-") and base.endswith(".json"))
        wanted = name.endswith(".json") or ASM_DEBUG_MARK in base
        budget = MAX_ESSENTIAL_TOTAL if essential else MAX_TEXT_TOTAL
        if wanted and member.size <= MAX_TEXT_BYTES \
                and self.read[essential] + member.size <= budget:
            self.texts[name] = _read(tar, member)
            self.read[essential] += member.size
        elif name.endswith(".npy"):
            header = _npy_header(tar, member)
            if header is not None:  # else listed with its size only
                self.npy[name] = header


def _read(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    handle = tar.extractfile(member)
    data = handle.read() if handle is not None else b""
    if len(data) != member.size:
        raise EOFError(f"payload member {member.name!r} truncated: {len(data)} of "
                       f"{member.size} bytes")
    return data


def _npy_header(tar: tarfile.TarFile, member: tarfile.TarInfo) -> NpyHeader | None:
    """The dtype and shape a `.npy` member's header gives (None if it is not one)."""
    handle = tar.extractfile(member)
    if handle is None:  # pragma: no cover - a regular member always has a handle
        return None
    try:
        version = npy_format.read_magic(handle)
        read = (npy_format.read_array_header_1_0 if version == (1, 0)
                else npy_format.read_array_header_2_0)
        shape, _fortran, dtype = read(handle)
    except (ValueError, SyntaxError, EOFError, OverflowError, TypeError, RecursionError,
            tokenize.TokenError):  # numpy tokenizes the header's Python literal
        return None
    return NpyHeader(dtype=str(dtype), shape=tuple(int(d) for d in shape))
