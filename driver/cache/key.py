"""The key of a compile: the module's content hash and the hash of the flags that change the
output.

The module hash is the SHA-256 of the model file's bytes. The flags hash is the SHA-256 of
the normalised flags (`CompileOptions.output_flags`: one spelling, defaults filled in,
settings that cannot matter dropped, sorted), the framework and the NEFF's name, so flag
order and spelling do not split the cache, and `--verbose`, `--logfile`, `--output`,
`--workdir`, `--pipeline` (which do not change the NEFF) are not part of it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from nxcc.driver.cache.digest import canonical_json, file_sha256
from nxcc.driver.cache.layout import entry_name

__all__ = ["CacheKey", "canonical_json", "file_sha256", "make_key"]

@dataclass(frozen=True)
class CacheKey:
    """A compile's identity; `entry` is the name of its cache directory."""

    module_sha256: str
    flags_sha256: str
    flags: dict[str, object]

    @property
    def entry(self) -> str:
        return entry_name(self.module_sha256, self.flags_sha256)


def make_key(path: str, flags: dict[str, object]) -> CacheKey:
    """The key of compiling the file at `path` with the normalised `flags` (which include
    the framework and the NEFF name)."""
    flags_hash = hashlib.sha256(canonical_json(flags).encode("utf-8")).hexdigest()
    return CacheKey(file_sha256(path), flags_hash, flags)
