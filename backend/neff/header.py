"""The fixed 1024-byte little-endian NEFF header: pack, unpack and validate."""

from __future__ import annotations

import dataclasses
import struct
import uuid as uuid_mod
from typing import Any

from nxcc.backend.neff.constants import (
    HEADER_SIZE,
    MAX_LNC_SIZE,
    NEFF_VERSION_MAJOR,
    NEFF_VERSION_MINOR,
    PKG_VERSION,
    SUPPORTED_MAJOR_VERSIONS,
    VALID_LNC_SIZES,
)
from nxcc.backend.neff.digest import algorithm_of, readable
from nxcc.backend.neff.errors import VERSION, NeffError

# offset  field                      (docs/neff-format.md says who writes what)
#   0     u64  pkg_version            2 (nxcc 0.2: 1)
#   8     u64  header_size            1024
#  16     u64  data_size              payload bytes
#  24     u64  neff_version_major
#  32     u64  neff_version_minor
#  40     u8[128] neff_build_version  zeros from the real tool; "nxcc-<version>" from nxcc
# 168     u32  num_tpb                logical cores
# 172     u8[32]  hash                payload MD5 as four LE words + 16 zeros (`digest`)
# 204     u8[16]  uuid
# 220     char[256] name
# 476     u32  requested_tpb_count
# 480     u8[64]  tpb_per_node
# 544     u64  feature_bits           the real tool's feature word (FEATURE_VNC...)
# 552     u32  lnc_size               physical cores per logical core (0: not recorded)
# 556     u8[468] pad
HEADER_FORMAT: str = "<QQQQQ128sI32s16s256sI64sQI468s"
_STRUCT = struct.Struct(HEADER_FORMAT)
assert _STRUCT.size == HEADER_SIZE

BUILD_VERSION_BYTES: int = 128
NAME_BYTES: int = 256
HASH_BYTES: int = 32
TPB_PER_NODE_BYTES: int = 64
_PAD_BYTES: int = 468
_U32_MAX: int = 2**32 - 1
_U64_MAX: int = 2**64 - 1


@dataclasses.dataclass(frozen=True, kw_only=True)
class NeffHeader:
    """Decoded NEFF header.

    Strings are stored without their NUL padding; ``tpb_per_node`` is the raw
    64-byte field. ``header_size`` is not a field: it is always ``HEADER_SIZE``.
    ``lnc`` is ``lnc_size`` with 0 (not recorded) read as 1.
    """

    hash: bytes
    uuid: uuid_mod.UUID
    name: str
    data_size: int
    num_tpb: int
    lnc_size: int
    requested_tpb_count: int = 0
    feature_bits: int = 0
    build_version: str = ""
    tpb_per_node: bytes = bytes(TPB_PER_NODE_BYTES)
    neff_version_major: int = NEFF_VERSION_MAJOR
    neff_version_minor: int = NEFF_VERSION_MINOR
    pkg_version: int = PKG_VERSION

    @property
    def lnc(self) -> int:
        return self.lnc_size or 1

    @property
    def hash_algorithm(self) -> str:
        """`digest.MD5` (the real tool's encoding) or `digest.SHA256` (nxcc 0.2)."""
        return algorithm_of(self.hash)

    def validate(self, source: str) -> None:
        """Raise :class:`NeffError` (prefixed with ``source``) unless the header can be
        packed and would be accepted by :meth:`unpack`; return None otherwise."""
        for field, limit in (
            ("pkg_version", _U64_MAX),
            ("data_size", _U64_MAX),
            ("neff_version_major", _U64_MAX),
            ("neff_version_minor", _U64_MAX),
            ("num_tpb", _U32_MAX),
            ("requested_tpb_count", _U32_MAX),
            ("feature_bits", _U64_MAX),
            ("lnc_size", _U32_MAX),
        ):
            value = getattr(self, field)
            if not isinstance(value, int) or not 0 <= value <= limit:
                raise NeffError(source, f"header field {field}={value!r} out of range 0..{limit}")
        if len(self.hash) != HASH_BYTES:
            raise NeffError(source, f"hash is {len(self.hash)} bytes, expected {HASH_BYTES}")
        if len(self.tpb_per_node) != TPB_PER_NODE_BYTES:
            raise NeffError(
                source,
                f"tpb_per_node is {len(self.tpb_per_node)} bytes, expected {TPB_PER_NODE_BYTES}",
            )
        _encode_str(self.build_version, "ascii", BUILD_VERSION_BYTES, "build_version", source)
        _encode_str(self.name, "utf-8", NAME_BYTES, "name", source)
        _check_semantics(source, self.neff_version_major, self.lnc_size)
        if self.lnc_size not in VALID_LNC_SIZES:
            allowed = " or ".join(str(v) for v in sorted(VALID_LNC_SIZES))
            raise NeffError(source, f"invalid lnc_size {self.lnc_size} (must be {allowed})")

    def pack(self, source: str = "<header>") -> bytes:
        """Return exactly ``HEADER_SIZE`` bytes; raise :class:`NeffError` if invalid."""
        self.validate(source)
        return _STRUCT.pack(
            self.pkg_version,
            HEADER_SIZE,
            self.data_size,
            self.neff_version_major,
            self.neff_version_minor,
            _encode_str(self.build_version, "ascii", BUILD_VERSION_BYTES, "build_version", source),
            self.num_tpb,
            self.hash,
            self.uuid.bytes,
            _encode_str(self.name, "utf-8", NAME_BYTES, "name", source),
            self.requested_tpb_count,
            self.tpb_per_node,
            self.feature_bits,
            self.lnc_size,
            bytes(_PAD_BYTES),
        )

    @classmethod
    def unpack(cls, data: bytes, source: str) -> NeffHeader:
        """Decode the first ``HEADER_SIZE`` bytes of ``data`` (extra bytes are ignored).

        Raises :class:`NeffError` naming ``source`` when the data is shorter than a
        header, the header_size field is not ``HEADER_SIZE``, the major version is
        unsupported, lnc_size is over ``MAX_LNC_SIZE``, or a string field does not decode.
        The feature word is the producer's and is not interpreted here.
        """
        if len(data) < HEADER_SIZE:
            raise NeffError(
                source,
                f"not a NEFF: {len(data)} bytes, shorter than the {HEADER_SIZE}-byte header",
            )
        (
            pkg_version,
            header_size,
            data_size,
            major,
            minor,
            build_raw,
            num_tpb,
            hash_,
            uuid_raw,
            name_raw,
            requested_tpb_count,
            tpb_per_node,
            feature_bits,
            lnc_size,
            _pad,
        ) = _STRUCT.unpack_from(data, 0)
        if header_size != HEADER_SIZE:
            raise NeffError(
                source,
                f"not a NEFF: header_size field is {header_size:#x}, expected {HEADER_SIZE}",
            )
        _check_semantics(source, major, lnc_size)
        return cls(
            pkg_version=pkg_version,
            data_size=data_size,
            neff_version_major=major,
            neff_version_minor=minor,
            build_version=_decode_str(build_raw, "ascii", "build_version", source),
            num_tpb=num_tpb,
            hash=hash_,
            uuid=uuid_mod.UUID(bytes=uuid_raw),
            name=_decode_str(name_raw, "utf-8", "name", source),
            requested_tpb_count=requested_tpb_count,
            tpb_per_node=tpb_per_node,
            feature_bits=feature_bits,
            lnc_size=lnc_size,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view: bytes fields as hex strings, uuid as its canonical string,
        plus ``header_size`` for completeness."""
        return {
            "pkg_version": self.pkg_version,
            "header_size": HEADER_SIZE,
            "data_size": self.data_size,
            "neff_version_major": self.neff_version_major,
            "neff_version_minor": self.neff_version_minor,
            "build_version": self.build_version,
            "num_tpb": self.num_tpb,
            "hash": self.hash.hex(),
            "hash_algorithm": self.hash_algorithm,
            "payload_digest": readable(self.hash),
            "uuid": str(self.uuid),
            "name": self.name,
            "requested_tpb_count": self.requested_tpb_count,
            "tpb_per_node": self.tpb_per_node.hex(),
            "feature_bits": self.feature_bits,
            "lnc_size": self.lnc_size,
        }


def _check_semantics(source: str, major: int, lnc_size: int) -> None:
    if major not in SUPPORTED_MAJOR_VERSIONS:
        supported = ", ".join(str(v) for v in sorted(SUPPORTED_MAJOR_VERSIONS))
        raise NeffError(
            source, f"unsupported NEFF major version {major} (this tool supports {supported})",
            VERSION)
    if lnc_size > MAX_LNC_SIZE:
        raise NeffError(source, f"invalid lnc_size {lnc_size} (at most {MAX_LNC_SIZE})")


def _encode_str(value: str, encoding: str, width: int, field: str, source: str) -> bytes:
    """Encode ``value`` NUL-padded to ``width`` bytes, or raise NeffError."""
    try:
        raw = value.encode(encoding)
    except (UnicodeEncodeError, AttributeError) as exc:
        raise NeffError(source, f"header {field} {value!r} is not {encoding}: {exc}") from exc
    if b"\0" in raw:
        raise NeffError(source, f"header {field} {value!r} contains a NUL character")
    if len(raw) > width:
        raise NeffError(
            source, f"header {field} is {len(raw)} bytes in {encoding}, the field holds {width}"
        )
    return raw.ljust(width, b"\0")


def _decode_str(raw: bytes, encoding: str, field: str, source: str) -> str:
    """Decode a NUL-padded field up to its first NUL, or raise NeffError."""
    text, _, _ = raw.partition(b"\0")
    try:
        return text.decode(encoding)
    except UnicodeDecodeError as exc:
        raise NeffError(source, f"header {field} is not valid {encoding}: {exc}") from exc
