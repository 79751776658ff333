"""Scratch memory shared by the steps of one bound function, which run one at a time.

A step prepared at load `reserve`s the scratch arrays it needs and gets a `Reservation`;
its `arrays()`, called on the step's first run (after every step of the function has been
bound), are views of the pool's one buffer, sized to the largest reservation. Every
reservation starts at offset 0: steps that never run at the same time share the memory,
so a function's scratch is its largest step's, not the sum (VGG-19's convolutions hold
their im2col tiles in one buffer). A step that runs again sees whatever the previous step
left there: it must write everything it reads.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

ALIGNMENT = 64


class ScratchPool:
    """One growable reservation size; one buffer, made on first use."""

    def __init__(self) -> None:
        self.nbytes = 0
        self._buffer: np.ndarray | None = None

    def reserve(self, arrays: Sequence[tuple[tuple[int, ...], np.dtype]]) -> Reservation:
        """Room for arrays of these (shape, dtype), laid out from offset 0."""
        offsets, end = [], 0
        for shape, dtype in arrays:
            offsets.append(end)
            size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            end += (size + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
        if self._buffer is not None and end > self._buffer.nbytes:
            raise RuntimeError("scratch reserved after the pool's buffer was made")
        self.nbytes = max(self.nbytes, end)
        return Reservation(self, list(arrays), offsets)

    def buffer(self) -> np.ndarray:
        if self._buffer is None:
            raw = np.empty(max(self.nbytes, 1) + ALIGNMENT, np.uint8)
            skip = -raw.ctypes.data % ALIGNMENT  # the buffer starts on a 64-byte boundary
            self._buffer = raw[skip:skip + max(self.nbytes, 1)]
        return self._buffer


class Reservation:
    """A step's arrays in a `ScratchPool`."""

    def __init__(self, pool: ScratchPool, arrays: list[tuple[tuple[int, ...], np.dtype]],
                 offsets: list[int]) -> None:
        self.pool = pool
        self.specs = arrays
        self.offsets = offsets

    def arrays(self) -> list[np.ndarray]:
        buffer = self.pool.buffer()
        return [np.ndarray(shape, dtype, buffer, offset)
                for (shape, dtype), offset in zip(self.specs, self.offsets, strict=True)]
