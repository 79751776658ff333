"""The members of an uncompressed NEFF payload, read in place from a memory map of the file.

An uncompressed payload is a plain tar, so every member's data lies in the file at a known
offset (a multiple of 512 bytes from the payload's start, itself 1024 bytes into the file):
`MappedMembers` keeps the read-only map of the whole file and each member's span, hands out
a member's bytes on demand, and `array` views a `.npy` member's data in place, without
reading or copying it (the pages come from the page cache when first touched, and count
once however many processes map them).
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator, Mapping

import numpy as np


class MappedMembers(Mapping[str, bytes]):
    """Payload path -> contents, read from `buffer` (a read-only map of the NEFF file) at
    the spans (offset in the file, size) the tar headers gave."""

    def __init__(self, buffer: mmap.mmap, spans: dict[str, tuple[int, int]]) -> None:
        self._buffer = buffer
        self._spans = spans

    def __getitem__(self, name: str) -> bytes:
        offset, size = self._spans[name]
        return self._buffer[offset:offset + size]

    def __contains__(self, name: object) -> bool:  # Mapping's would read the member
        return name in self._spans

    def __iter__(self) -> Iterator[str]:
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)

    def without(self, name: str) -> MappedMembers:
        """The same members but `name`, on the same map."""
        return MappedMembers(self._buffer, {k: v for k, v in self._spans.items() if k != name})

    def span(self, name: str) -> tuple[int, int]:
        """Where member `name`'s data lies in the file: (offset, size)."""
        return self._spans[name]

    def prefix(self, name: str, count: int) -> bytes:
        """The first `count` bytes of member `name` (fewer if it is shorter)."""
        offset, size = self._spans[name]
        return self._buffer[offset:offset + min(count, size)]

    def array(self, name: str, start: int, shape: tuple[int, ...], dtype: np.dtype,
              fortran: bool) -> np.ndarray:
        """A read-only array viewing member `name`'s bytes from `start` on (the caller has
        checked that shape x dtype fills the rest of the member exactly); it does not own
        its data: the map does."""
        offset, _ = self._spans[name]
        return np.ndarray(shape, dtype, buffer=self._buffer, offset=offset + start,
                          order="F" if fortran else "C")


def member_span(files: Mapping[str, bytes], name: str) -> tuple[int, int] | None:
    """Member `name`'s span in the file when `files` maps the payload, else None."""
    return files.span(name) if isinstance(files, MappedMembers) else None
