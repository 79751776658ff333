"""convert and bitcast_convert.

convert: float -> int truncates toward zero and saturates (NaN -> 0, out of range -> the
type's min/max, as XLA does); anything -> pred is x != 0 (NaN -> true); int -> int wraps;
float -> float rounds to nearest even (bf16 through ml_dtypes).

bitcast_convert reinterprets the bytes (little-endian); converting to a narrower type adds
a minor dimension of size ratio, to a wider type removes it (HLO semantics).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue
from nxcc.ir.kernels.base import KernelContext, kernel
from nxcc.ir.kernels.common import as_compute, is_float, store
from nxcc.ir.kernels.plan import kernel_only


def _float_to_int(x: np.ndarray, dst: np.dtype) -> np.ndarray:
    info = np.iinfo(dst)
    bits = dst.itemsize * 8
    t = np.trunc(np.asarray(x, dtype=np.float64))
    upper = 2.0 ** (bits - 1) if dst.kind == "i" else 2.0**bits  # exclusive, exact in f64
    lower = -(2.0 ** (bits - 1)) if dst.kind == "i" else 0.0
    high = t >= upper
    low = t < lower
    bad = high | low | np.isnan(t)
    r = np.where(bad, 0.0, t).astype(dst)
    r = np.where(high, np.array(info.max, dst), r)
    return np.where(low, np.array(info.min, dst), r)


def convert_array(x: np.ndarray, dst: np.dtype) -> np.ndarray:
    """`x` converted to `dst` with HLO convert semantics (see module doc)."""
    x = np.asarray(x)
    dst = np.dtype(dst)
    if dst == np.bool_:
        return as_compute(x) != 0
    if is_float(x.dtype) and dst.kind in "iu":
        return _float_to_int(as_compute(x), dst)
    if x.dtype == np.bool_ and is_float(dst):
        return x.astype(np.float32).astype(dst)
    with np.errstate(all="ignore"):
        return x.astype(dst)


@kernel(ops.convert)
def convert(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
            attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """outs[0] = args[0] converted to attrs['dtype']."""
    store(outs[0], convert_array(args[0], outs[0].dtype))


def bitcast_array(x: np.ndarray, dst: np.dtype) -> np.ndarray:
    """The bytes of `x` read as `dst`, reshaped per HLO (see module doc)."""
    x = np.ascontiguousarray(x)
    dst = np.dtype(dst)
    a, b = x.dtype.itemsize, dst.itemsize
    if a == b:
        return x.view(dst)
    if a > b:
        return x.reshape(*x.shape, 1).view(dst)
    return x.view(dst).reshape(x.shape[:-1])


@kernel(ops.bitcast_convert)
def bitcast_convert(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
                    attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """outs[0] = the bits of args[0] as attrs['dtype']."""
    np.copyto(outs[0], bitcast_array(args[0], outs[0].dtype))


kernel_only(ops.convert, ops.bitcast_convert)
