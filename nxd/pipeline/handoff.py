"""What crosses a pipeline cut: the values one stage hands the next, as one tensor.

The values built before a cut and read after it (the residual stream alone at a cut between
layers; at a cut inside a layer also a normed input, a projection's columns so far, q, k, v
or a context) cross as one array: `pack` joins them flattened, in order, into one vector and
`unpack` cuts the vector back into values of the given types, so the engine sends one array
per micro-batch whatever the cut. A single value crosses as it is. Both are reshapes, one
concatenate or slices: no arithmetic, so the FLOP counts of the stages do not change.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nxcc.ir.builder import Builder
from nxcc.ir.core import Value
from nxcc.ir.types import TensorType


def packed_type(types: Sequence[TensorType]) -> TensorType:
    """The type of what crosses a cut before a piece reading values of `types` (all of one
    dtype): the only type, or a vector of their sizes' sum."""
    if len(types) == 1:
        return types[0]
    if len({t.dtype for t in types}) != 1:
        raise ValueError("values of several dtypes cannot cross a cut as one vector")
    size = sum(int(np.prod(t.shape, dtype=np.int64)) for t in types)
    return TensorType(types[0].dtype, (size,))


def pack(b: Builder, values: Sequence[Value]) -> Value:
    """One value carrying `values` (see `packed_type`)."""
    if len(values) == 1:
        return values[0]
    flat = [b.reshape(v, (int(np.prod(v.type.shape, dtype=np.int64)),)) for v in values]
    return b.concatenate(*flat, dimension=0)


def unpack(b: Builder, packed: Value, types: Sequence[TensorType]) -> tuple[Value, ...]:
    """The values of `types` that `pack` joined into `packed`."""
    if len(types) == 1:
        return (packed,)
    out, offset = [], 0
    for t in types:
        size = int(np.prod(t.shape, dtype=np.int64))
        part = b.slice(packed, start_indices=(offset,), limit_indices=(offset + size,),
                       strides=(1,))
        out.append(b.reshape(part, t.shape))
        offset += size
    return tuple(out)
