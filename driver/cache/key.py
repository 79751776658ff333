"""The key of a compile: the module's content hash and the hash of the flags that change the
output.

The module hash is the SHA-256 of the model file's bytes. The flags hash is the SHA-256 of
the normalised flags (`CompileOptions.output_flags`: one spelling, defaults filled in,
settings that cannot matter dropped, sorted), the framework and the NEFF's name, so flag
order and spelling do not split the cache, and `--verbose`, `--logfile`, `--output`,
`--workdir`, `--pipeline` (which do not change the NEFF) are not part of it.

Entries are kept per compiler version, as the Neuron tools keep theirs. Run from a checkout
(the layer folders beside the `nxcc` package, not an installed copy), nxcc's own code can
change without its version: there the flags hash also covers `source_state()`, the paths,
sizes and modification times of the layers' sources, so a contributor's edit is compiled
rather than answered by a NEFF the old code wrote.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass

import nxcc
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
    text = canonical_json(flags) + source_state()
    flags_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return CacheKey(file_sha256(path), flags_hash, flags)


#: the folders of a checkout whose sources make the compiler
_LAYERS = ("nxcc", "compiler", "ir", "passes", "nxd", "backend", "driver", "cli")


@functools.cache
def source_state() -> str:
    """'' for an installed nxcc; in a checkout, `tree_state` of its layer folders (once
    per process: the code that runs is the code imported)."""
    roots = list(nxcc.__path__)[1:]  # a checkout appends its root (nxcc/__init__.py)
    return tree_state(roots[0]) if roots else ""


def tree_state(root: str) -> str:
    """A digest of the relative path, size and modification time of every .py and .lark
    file under `root`'s layer folders (empty for a tree without them)."""
    lines = []
    for layer in _LAYERS:
        for folder, dirs, files in os.walk(os.path.join(root, layer)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".lark")):
                    full = os.path.join(folder, name)
                    st = os.stat(full)
                    lines.append(f"{os.path.relpath(full, root)} {st.st_size} {st.st_mtime_ns}")
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest() if lines else ""
