"""Element types of the IR, modelled on XLA's primitive types.

Each `DType` knows its text name (as HLO prints it: ``f32``, ``s64``, ``pred``...) and the
numpy dtype that holds its values at run time (bfloat16 through ml_dtypes).
"""

from __future__ import annotations

import enum

import ml_dtypes
import numpy as np


class DType(enum.Enum):
    """An element type. The value is the text name used by the IR printer and parser."""

    PRED = "pred"
    S8 = "s8"
    S16 = "s16"
    S32 = "s32"
    S64 = "s64"
    U8 = "u8"
    U16 = "u16"
    U32 = "u32"
    U64 = "u64"
    F16 = "f16"
    BF16 = "bf16"
    F32 = "f32"
    F64 = "f64"

    @property
    def numpy(self) -> np.dtype:
        """The numpy dtype holding values of this type."""
        return _NUMPY[self]

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return _NUMPY[self].itemsize

    @property
    def is_float(self) -> bool:
        return self in (DType.F16, DType.BF16, DType.F32, DType.F64)

    @property
    def is_signed_int(self) -> bool:
        return self in (DType.S8, DType.S16, DType.S32, DType.S64)

    @property
    def is_unsigned_int(self) -> bool:
        return self in (DType.U8, DType.U16, DType.U32, DType.U64)

    @property
    def is_integer(self) -> bool:
        return self.is_signed_int or self.is_unsigned_int

    @property
    def is_pred(self) -> bool:
        return self is DType.PRED

    @staticmethod
    def from_name(name: str) -> DType:
        """The DType whose text name is `name`; ValueError naming the known ones otherwise."""
        try:
            return DType(name)
        except ValueError:
            known = ", ".join(d.value for d in DType)
            raise ValueError(f"unknown element type '{name}' (known: {known})") from None

    @staticmethod
    def from_numpy(dtype: np.dtype | type) -> DType:
        """The DType holding numpy `dtype`; ValueError if the IR has no such type."""
        key = np.dtype(dtype)
        for dt, npdt in _NUMPY.items():
            if npdt == key:
                return dt
        raise ValueError(f"numpy dtype {key} has no IR element type")

    def __repr__(self) -> str:
        return f"DType.{self.name}"

    def __str__(self) -> str:
        return self.value


_NUMPY: dict[DType, np.dtype] = {
    DType.PRED: np.dtype(np.bool_),
    DType.S8: np.dtype(np.int8),
    DType.S16: np.dtype(np.int16),
    DType.S32: np.dtype(np.int32),
    DType.S64: np.dtype(np.int64),
    DType.U8: np.dtype(np.uint8),
    DType.U16: np.dtype(np.uint16),
    DType.U32: np.dtype(np.uint32),
    DType.U64: np.dtype(np.uint64),
    DType.F16: np.dtype(np.float16),
    DType.BF16: np.dtype(ml_dtypes.bfloat16),
    DType.F32: np.dtype(np.float32),
    DType.F64: np.dtype(np.float64),
}
