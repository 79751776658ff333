"""Small helpers shared by the type rules of the core ops."""

from __future__ import annotations

from collections.abc import Sequence

from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import TypeRuleError
from nxcc.ir.types import TensorType


def fail(message: str) -> TypeRuleError:
    return TypeRuleError(message)


def same_types(op: str, types: Sequence[TensorType]) -> TensorType:
    """The common type of `types`; error naming the first that differs."""
    first = types[0]
    for i, t in enumerate(types[1:], start=1):
        if t != first:
            raise fail(f"{op}: operand {i} is {t}, expected {first} like operand 0")
    return first


def check_dims(op: str, what: str, dims: Sequence[int], rank: int, unique: bool = True) -> None:
    """Every dim of `dims` lies in [0, rank) (and they are distinct when `unique`)."""
    for d in dims:
        if not 0 <= d < rank:
            raise fail(f"{op}: {what} {d} is out of range for rank {rank}")
    if unique and len(set(dims)) != len(dims):
        raise fail(f"{op}: {what} {list(dims)} repeats a dimension")


def check_dtype(op: str, t: TensorType, allowed: str) -> None:
    """`allowed` is any of 'float', 'int', 'pred', 'signed' joined with '|'."""
    kinds = allowed.split("|")
    ok = (
        ("float" in kinds and t.dtype.is_float)
        or ("int" in kinds and t.dtype.is_integer)
        or ("signed" in kinds and (t.dtype.is_signed_int or t.dtype.is_float))
        or ("pred" in kinds and t.dtype is DType.PRED)
    )
    if not ok:
        raise fail(f"{op}: element type {t.dtype} is not allowed (expected {allowed})")


def check_scalar(op: str, what: str, t: TensorType) -> None:
    if t.rank != 0:
        raise fail(f"{op}: {what} must be a scalar, got {t}")


def window_output_size(
    size: int, window: int, stride: int, pad_lo: int, pad_hi: int, base_dil: int, win_dil: int
) -> int:
    """Output length of a strided, padded, dilated window over one dimension (>= 0); strides
    and dilations must be positive (a TypeError from `fail` otherwise)."""
    if min(stride, base_dil, win_dil) < 1 or window < 0:
        raise fail(f"window strides and dilations must be positive and the window size not "
                   f"negative, got window {window}, stride {stride}, dilations {base_dil}, "
                   f"{win_dil}")
    dilated_base = (size - 1) * base_dil + 1 if size > 0 else 0
    padded = dilated_base + pad_lo + pad_hi
    dilated_window = (window - 1) * win_dil + 1
    if padded < dilated_window:
        return 0
    return (padded - dilated_window) // stride + 1
