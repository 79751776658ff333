"""dot_general: batched matrix multiplication with HLO dimension numbers.

lhs is transposed to (batch, free, contracting) and rhs to (batch, contracting, free), both
reshaped to 3-D and multiplied by one np.matmul (written straight into a 3-D view of the out
when it is contiguous and already of the compute dtype). Floats accumulate in the wider of
the operand and result compute dtypes (f32 at least); integers in 64 bits, which is exact
modulo 2**64 and so wraps exactly like an accumulation in the result type.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue, attr_ints
from nxcc.ir.kernels.base import KernelContext, kernel
from nxcc.ir.kernels.common import NATIVE_FLOATS, compute_dtype, is_float, store
from nxcc.ir.kernels.plan import Step, plan
from nxcc.ir.kernels.scratch_pool import ScratchPool


def accumulate_dtype(operand: np.dtype, result: np.dtype) -> np.dtype:
    """The dtype a contraction of `operand` values into `result` values is computed in."""
    if is_float(operand) or is_float(result):
        wide = [compute_dtype(d) for d in (operand, result) if is_float(d)]
        return max(wide, key=lambda d: d.itemsize)
    if operand.kind == "u" and (result.kind == "u" or result == np.bool_):
        return np.dtype(np.uint64)
    return np.dtype(np.int64)


def _as_3d(x: np.ndarray, batch: Sequence[int], first: Sequence[int],
           second: Sequence[int], dtype: np.dtype) -> np.ndarray:
    """`x` transposed to (batch, first, second) and reshaped to 3-D, as `dtype`."""
    t = x.transpose([*batch, *first, *second])
    size = [math.prod(x.shape[d] for d in dims) for dims in (batch, first, second)]
    return t.astype(dtype, copy=False).reshape(size)


def matmul_operands(lhs: np.ndarray, rhs: np.ndarray, out_dtype: np.dtype,
                    attrs: Mapping[str, AttrValue]) -> tuple[np.ndarray, np.ndarray, np.dtype]:
    """(a, b, acc): the operands of dot_general as 3-D (batch, m, k) and (batch, k, n) arrays
    of the accumulation dtype `acc` (views of lhs and rhs when no copy is needed)."""
    lb, rb = attr_ints(attrs, "lhs_batch_dims"), attr_ints(attrs, "rhs_batch_dims")
    lc, rc = attr_ints(attrs, "lhs_contracting_dims"), attr_ints(attrs, "rhs_contracting_dims")
    lfree = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    rfree = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
    acc = accumulate_dtype(lhs.dtype, out_dtype)
    if lhs.dtype == np.bool_:
        acc = np.dtype(np.int64)
    a = _as_3d(lhs, lb, lfree, lc, acc)
    b = _as_3d(rhs, rb, rc, rfree, acc)
    return a, b, acc


@kernel(ops.dot_general)
def dot_general(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
                attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """out[b, m, n] = sum_k lhs[b, m, k] * rhs[b, k, n] (dims per the attributes)."""
    out = outs[0]
    a, b, acc = matmul_operands(args[0], args[1], out.dtype, attrs)
    shape3 = (a.shape[0], a.shape[1], b.shape[2])
    with np.errstate(all="ignore"):
        if out.dtype == acc and out.flags.c_contiguous:
            np.matmul(a, b, out=out.reshape(shape3))
        else:
            r = np.matmul(a, b).reshape(out.shape)
            store(out, r != 0 if out.dtype == np.bool_ else r)


@plan(ops.dot_general, dense_constants=True)
def dot_general_plan(args: Sequence[np.ndarray], out: np.ndarray,
                     attrs: Mapping[str, AttrValue], ctx: KernelContext,
                     constant: Sequence[bool], pool: ScratchPool) -> Step | None:
    """Into a contiguous out of the accumulation dtype: ``np.matmul(a, b, out=out3)`` with
    its 3-D operands made once when they are views of their slot or constants (a transposed
    weight is packed once, at load)."""
    lhs, rhs = args
    a, b, acc = matmul_operands(lhs, rhs, out.dtype, attrs)
    if out.dtype != acc or not out.flags.c_contiguous:
        return None
    for derived, source, fixed in ((a, lhs, constant[0]), (b, rhs, constant[1])):
        if not fixed and not (derived.size == 0 or np.may_share_memory(derived, source)):
            return None  # a copy made now would not follow later values of the slot
    out3 = out.reshape(a.shape[0], a.shape[1], b.shape[2])
    if a.shape[0] == 1 and acc in NATIVE_FLOATS and _blas_layout(a[0]) and _blas_layout(b[0]):
        # one matrix product: np.dot calls the same BLAS gemm as np.matmul (the same bits
        # on 3,024 shapes and layouts, both OpenBLAS kernels) with less of numpy's
        # dispatch: 0.50 against 0.81 us for examples/mlp.onnx's f32[4,16] x f32[16,32]
        return functools.partial(np.dot, a[0], b[0], out=out3[0])
    return functools.partial(np.matmul, a, b, out=out3)


def _blas_layout(m: np.ndarray) -> bool:
    """A matrix BLAS reads in place (C- or Fortran-contiguous): np.dot gives it to gemm
    as it is; another layout would take numpy's own loop."""
    return m.flags.c_contiguous or m.flags.f_contiguous
