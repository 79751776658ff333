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
    # Narrow storage types (XLA's names), held by ml_dtypes; arithmetic on them is done in
    # f32 (floats) or a wider integer by the kernels, as for f16/bf16.
    F8E4M3FN = "f8e4m3fn"
    F8E4M3FNUZ = "f8e4m3fnuz"
    F8E5M2 = "f8e5m2"
    F8E5M2FNUZ = "f8e5m2fnuz"
    F8E8M0FNU = "f8e8m0fnu"
    F4E2M1FN = "f4e2m1fn"
    S4 = "s4"
    U4 = "u4"
    S2 = "s2"
    U2 = "u2"

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
        return self in _FLOATS

    @property
    def is_signed_int(self) -> bool:
        return self in (DType.S8, DType.S16, DType.S32, DType.S64, DType.S4, DType.S2)

    @property
    def is_unsigned_int(self) -> bool:
        return self in (DType.U8, DType.U16, DType.U32, DType.U64, DType.U4, DType.U2)

    @property
    def is_narrow(self) -> bool:
        """One of the sub-16-bit float or sub-8-bit integer storage types (f8, f4, s4...)."""
        return self in _NARROW

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
    DType.F8E4M3FN: np.dtype(ml_dtypes.float8_e4m3fn),
    DType.F8E4M3FNUZ: np.dtype(ml_dtypes.float8_e4m3fnuz),
    DType.F8E5M2: np.dtype(ml_dtypes.float8_e5m2),
    DType.F8E5M2FNUZ: np.dtype(ml_dtypes.float8_e5m2fnuz),
    DType.F8E8M0FNU: np.dtype(ml_dtypes.float8_e8m0fnu),
    DType.F4E2M1FN: np.dtype(ml_dtypes.float4_e2m1fn),
    DType.S4: np.dtype(ml_dtypes.int4),
    DType.U4: np.dtype(ml_dtypes.uint4),
    DType.S2: np.dtype(ml_dtypes.int2),
    DType.U2: np.dtype(ml_dtypes.uint2),
}

_NARROW = frozenset({DType.F8E4M3FN, DType.F8E4M3FNUZ, DType.F8E5M2, DType.F8E5M2FNUZ,
                     DType.F8E8M0FNU, DType.F4E2M1FN, DType.S4, DType.U4, DType.S2, DType.U2})
_FLOATS = frozenset({DType.F16, DType.BF16, DType.F32, DType.F64, DType.F8E4M3FN,
                     DType.F8E4M3FNUZ, DType.F8E5M2, DType.F8E5M2FNUZ, DType.F8E8M0FNU,
                     DType.F4E2M1FN})
