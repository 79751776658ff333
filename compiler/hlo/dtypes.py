"""HLO element type names: which the parser accepts, which the IR can hold."""

from __future__ import annotations

import numpy as np

from nxcc.ir.dtypes import DType

# Every primitive type name XLA prints; the parser accepts all of them.
HLO_TYPES = frozenset({
    "pred", "s1", "s2", "s4", "s8", "s16", "s32", "s64", "u1", "u2", "u4", "u8", "u16", "u32",
    "u64", "f16", "bf16", "f32", "f64", "c64", "c128", "f4e2m1fn", "f8e3m4", "f8e4m3",
    "f8e4m3fn", "f8e4m3b11fnuz", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz", "f8e8m0fnu", "token",
    "opaque",
})

# The ones the IR has (the list).
IR_TYPES: dict[str, DType] = {d.value: d for d in DType}


def ir_dtype(name: str) -> DType | None:
    """The IR element type of HLO type `name`, None when the IR has none."""
    return IR_TYPES.get(name)


def numpy_dtype_of(name: str) -> np.dtype:
    """The numpy dtype holding HLO type `name`; ValueError when the IR has no such type."""
    dt = IR_TYPES.get(name)
    if dt is None:
        raise ValueError(f"element type {name} is not supported (supported: "
                         f"{', '.join(IR_TYPES)})")
    return dt.numpy
