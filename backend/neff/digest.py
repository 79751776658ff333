"""The payload hash in the header's 32-byte field, in the encodings NEFFs carry.

- The real tool's (and nxcc's, package version 2): the MD5 of the payload, its 16 bytes read
  as four 32-bit words (the digest's usual hex form, split in four) and stored little-endian,
  followed by 16 zero bytes. `NEURON_RT_VALIDATE_HASH=true` checks this one.
- nxcc 0.2's (package version 1): the SHA-256 of the payload, its 32 bytes as they are.

Which one a header holds is told from the field itself: an MD5 leaves the last 16 bytes
zero, which a SHA-256 does with probability 2**-128.
"""

from __future__ import annotations

import hashlib
from typing import Protocol

HASH_FIELD_BYTES: int = 32
MD5: str = "md5"
SHA256: str = "sha256"


class Hasher(Protocol):
    def update(self, data: bytes | memoryview, /) -> None: ...

    def digest(self) -> bytes: ...


def encode_md5(digest: bytes) -> bytes:
    """The header field for an MD5 `digest` (16 bytes): each 4-byte word byte-reversed, then
    16 zero bytes."""
    if len(digest) != 16:
        raise ValueError(f"an MD5 digest is 16 bytes, got {len(digest)}")
    words = b"".join(digest[i:i + 4][::-1] for i in range(0, 16, 4))
    return words + bytes(HASH_FIELD_BYTES - 16)


def decode_md5(field: bytes) -> bytes:
    """The MD5 digest a field written by `encode_md5` holds (16 bytes)."""
    return b"".join(field[i:i + 4][::-1] for i in range(0, 16, 4))


def algorithm_of(field: bytes) -> str:
    """`MD5` when the field is in the real tool's encoding, else `SHA256` (nxcc 0.2)."""
    return MD5 if field[16:HASH_FIELD_BYTES] == bytes(HASH_FIELD_BYTES - 16) else SHA256


def new_hasher(algorithm: str) -> Hasher:
    """A fresh hasher for `algorithm` (`MD5` or `SHA256`)."""
    return hashlib.md5(usedforsecurity=False) if algorithm == MD5 else hashlib.sha256()


def field_of(algorithm: str, hasher: Hasher, stored: bytes = b"") -> bytes:
    """The 32-byte header field for what `hasher` (of `algorithm`) has read. An MD5 is in
    the real tool's word order, unless `stored` (the header's field) holds it in the
    digest's own byte order: that is taken as a match too."""
    digest = hasher.digest()
    if algorithm != MD5:
        return digest
    plain = digest + bytes(HASH_FIELD_BYTES - 16)
    return plain if stored == plain else encode_md5(digest)


def readable(field: bytes) -> str:
    """The hash as people compare it: `md5sum`'s hex of the payload for an MD5 field, the
    SHA-256 hex otherwise."""
    return decode_md5(field).hex() if algorithm_of(field) == MD5 else field.hex()
