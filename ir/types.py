"""Static-shape tensor types: an element type and a tuple of dimension sizes."""

from __future__ import annotations

import math
from dataclasses import dataclass

from nxcc.ir.dtypes import DType


@dataclass(frozen=True, slots=True)
class TensorType:
    """The type of every IR value: `dtype[d0,d1,...]`, all dimensions static and >= 0.

    A rank-0 type (``shape == ()``) is a scalar. Instances are immutable and hashable and
    check themselves when built.
    """

    dtype: DType
    shape: tuple[int, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.dtype, DType):
            raise TypeError(f"TensorType dtype must be a DType, got {self.dtype!r}")
        shape = tuple(self.shape)
        for d in shape:
            if not isinstance(d, int) or isinstance(d, bool) or d < 0:
                raise ValueError(f"TensorType dimensions must be ints >= 0, got {shape}")
        object.__setattr__(self, "shape", shape)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def with_shape(self, shape: tuple[int, ...] | list[int]) -> TensorType:
        return TensorType(self.dtype, tuple(shape))

    def with_dtype(self, dtype: DType) -> TensorType:
        return TensorType(dtype, self.shape)

    def __str__(self) -> str:
        return f"{self.dtype.value}[{','.join(str(d) for d in self.shape)}]"
