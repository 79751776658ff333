"""`Neff`: a compiled NEFF as the Python API hands it over: a file, or bytes in memory.

`nxcc.compile(..., output=PATH)` returns a `Neff` naming the file it wrote. Without `output`
the NEFF is the compiler's own temporary file (`temporary`), removed with the `Neff` object;
`Neff(data=...)` holds bytes. Either way `to_bytes()` gives its bytes, `save(path)` writes it
atomically, `header` reads its 1024-byte header, and `nxcc.load` and `nxcc.inspect` take it
as they take a path.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator

from nxcc.backend.neff.atomic import write_chunks
from nxcc.backend.neff.constants import HEADER_SIZE
from nxcc.backend.neff.header import NeffHeader


class Neff:
    """A NEFF: the file `path`, or (`path` None) the bytes `data` in memory."""

    temporary = False
    """Whether `path` is a temporary file that goes with this object."""

    def __init__(self, path: str | os.PathLike[str] | None = None,
                 data: bytes | None = None) -> None:
        """Exactly one of `path` and `data`."""
        if (path is None) == (data is None):
            raise ValueError("a Neff is a file (path) or bytes (data), exactly one of them")
        self.path: str | None = os.fspath(path) if path is not None else None
        self.data: bytes | None = bytes(data) if data is not None else None

    @classmethod
    def owning(cls, path: str, directory: str) -> Neff:
        """The NEFF at `path` inside the temporary `directory`, which is removed when the
        object is (or at exit)."""
        neff = cls(path)
        neff.temporary = True
        weakref.finalize(neff, shutil.rmtree, directory, ignore_errors=True)
        return neff

    def to_bytes(self) -> bytes:
        """The NEFF's bytes (read from `path` when it is a file)."""
        if self.data is not None:
            return self.data
        assert self.path is not None
        with open(self.path, "rb") as f:
            return f.read()

    def save(self, path: str | os.PathLike[str]) -> Neff:
        """Write the NEFF to `path` atomically; the `Neff` of that file."""
        target = os.fspath(path)
        write_chunks(target, [self.to_bytes()])
        return Neff(target)

    @property
    def header(self) -> NeffHeader:
        """The NEFF's header (NeffError if it is not one)."""
        source = self.path or "<memory>"
        if self.data is not None:
            return NeffHeader.unpack(self.data[:HEADER_SIZE], source)
        with open(source, "rb") as f:
            return NeffHeader.unpack(f.read(HEADER_SIZE), source)

    @contextlib.contextmanager
    def as_file(self) -> Iterator[str]:
        """A path holding the NEFF for the block: `path`, or a temporary file removed after."""
        if self.path is not None:
            yield self.path
            return
        with tempfile.TemporaryDirectory(prefix="nxcc-neff-") as tmp:
            target = os.path.join(tmp, "model.neff")
            with open(target, "wb") as f:
                f.write(self.to_bytes())
            yield target

    def __repr__(self) -> str:
        if self.temporary:
            return f"Neff(<temporary file of {os.path.getsize(self.path or '')} bytes>)"
        if self.path is not None:
            return f"Neff({self.path!r})"
        return f"Neff(<{len(self.data or b'')} bytes in memory>)"
