"""Content hashes of the compile cache: a file's SHA-256 and canonical JSON for flags."""

from __future__ import annotations

import hashlib
import json

_CHUNK = 1 << 20


def file_sha256(path: str) -> str:
    """The SHA-256 of the file at `path`, hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def canonical_json(value: object) -> str:
    """`value` as JSON with sorted keys and no spaces: equal values give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
