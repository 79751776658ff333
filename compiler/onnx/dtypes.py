"""ONNX element types <-> IR element types."""

from __future__ import annotations

from onnx import TensorProto

from nxcc.compiler.onnx.errors import UNSUPPORTED_DTYPE, FrontendError
from nxcc.ir.dtypes import DType

ONNX_TO_IR: dict[int, DType] = {
    TensorProto.FLOAT: DType.F32,
    TensorProto.FLOAT16: DType.F16,
    TensorProto.BFLOAT16: DType.BF16,
    TensorProto.DOUBLE: DType.F64,
    TensorProto.INT8: DType.S8,
    TensorProto.INT16: DType.S16,
    TensorProto.INT32: DType.S32,
    TensorProto.INT64: DType.S64,
    TensorProto.UINT8: DType.U8,
    TensorProto.UINT16: DType.U16,
    TensorProto.UINT32: DType.U32,
    TensorProto.UINT64: DType.U64,
    TensorProto.BOOL: DType.PRED,
    TensorProto.FLOAT8E4M3FN: DType.F8E4M3FN,
    TensorProto.FLOAT8E4M3FNUZ: DType.F8E4M3FNUZ,
    TensorProto.FLOAT8E5M2: DType.F8E5M2,
    TensorProto.FLOAT8E5M2FNUZ: DType.F8E5M2FNUZ,
    TensorProto.FLOAT8E8M0: DType.F8E8M0FNU,
    TensorProto.FLOAT4E2M1: DType.F4E2M1FN,
    TensorProto.INT4: DType.S4,
    TensorProto.UINT4: DType.U4,
    TensorProto.INT2: DType.S2,
    TensorProto.UINT2: DType.U2,
}

IR_TO_ONNX: dict[DType, int] = {v: k for k, v in ONNX_TO_IR.items()}


def onnx_type_name(elem_type: int) -> str:
    """The ONNX spelling of `elem_type` (``FLOAT``, ``STRING``...), or its number."""
    try:
        return TensorProto.DataType.Name(elem_type)
    except ValueError:
        return str(elem_type)


def to_ir_dtype(elem_type: int, what: str) -> DType:
    """The IR type of ONNX `elem_type`; FrontendError naming `what` (a value) if none."""
    try:
        return ONNX_TO_IR[elem_type]
    except KeyError:
        raise FrontendError(
            f"{what} has element type {onnx_type_name(elem_type)}, which nxcc does not support",
            UNSUPPORTED_DTYPE,
        ) from None
