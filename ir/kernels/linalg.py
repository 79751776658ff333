"""dot_general: batched matrix multiplication with HLO dimension numbers.

lhs is transposed to (batch, free, contracting) and rhs to (batch, contracting, free), each
group of dims merged into one, and the two multiplied by one np.matmul (written straight
into a view of the out when it is contiguous and already of the compute dtype). The
operands stay views of the arguments wherever numpy's matmul can hand their matrices to
BLAS as they are (rows or columns a fixed stride apart): 3-D (batch, m, k) when every group
merges in place, else with the batch dims kept apart (attention's keys [b, s, h, d] batched
over b and h), and a copy only when a group cannot merge or a matrix has no BLAS layout.
Floats accumulate in the wider of the operand and result compute dtypes (f32 at least);
integers in 64 bits, which is exact modulo 2**64 and so wraps exactly like an accumulation
in the result type.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue, attr_ints
from nxcc.ir.kernels.base import KernelContext, kernel
from nxcc.ir.kernels.common import NATIVE_FLOATS, bound_call, compute_dtype, is_float, store
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


def _merges(t: np.ndarray, groups: Sequence[int]) -> bool:
    """Whether each group of consecutive dims of `t` (`groups`: their counts, in order)
    merges into one dim without a copy."""
    start = 0
    for count in groups:
        dims = [(n, st) for n, st in zip(t.shape[start:start + count],
                                          t.strides[start:start + count], strict=True)
                if n != 1]
        if any(st0 != st1 * n1 for (_, st0), (n1, st1) in zip(dims, dims[1:], strict=False)):
            return False
        start += count
    return True


def _blas_matrices(x: np.ndarray) -> bool:
    """Whether numpy's matmul gives the matrices of stack `x` (its last two dims) to BLAS
    in place: one stride the item size, the other a multiple of it no shorter than a row
    or column (numpy's `is_blasable2d`); else it would run its own loop."""
    rows, cols = x.shape[-2:]
    item = x.itemsize
    for (outer, n), inner in (((x.strides[-2], cols), x.strides[-1]),
                              ((x.strides[-1], rows), x.strides[-2])):
        if inner == item and outer % item == 0 and outer // item >= n:
            return True
    return x.size == 0


def _stacked(t: np.ndarray, batch: int, groups: tuple[int, int], dtype: np.dtype,
             merge_batch: bool) -> np.ndarray:
    """`t` (dims: `batch` batch dims, then the two groups) as a stack of matrices of
    `dtype`: [batch, m, k] with `merge_batch`, else [*batch dims, m, k]; a view when the
    groups merge in place and its matrices have a BLAS layout, else a contiguous copy."""
    shape = t.shape
    m = math.prod(shape[batch:batch + groups[0]])
    k = math.prod(shape[batch + groups[0]:])
    lead = [math.prod(shape[:batch])] if merge_batch else list(shape[:batch])
    x = t.astype(dtype, copy=False).reshape([*lead, m, k])
    return x if _blas_matrices(x) else np.ascontiguousarray(x)


def product_dims(attrs: Mapping[str, AttrValue], lhs_rank: int, rhs_rank: int
                 ) -> tuple[list[int], list[int], list[int], list[int], list[int], list[int]]:
    """A dot_general's dims on operands of these ranks: (lhs batch, rhs batch, lhs
    contracting, rhs contracting, lhs free, rhs free), the free ones in increasing order."""
    lb, rb = list(attr_ints(attrs, "lhs_batch_dims")), list(attr_ints(attrs, "rhs_batch_dims"))
    lc = list(attr_ints(attrs, "lhs_contracting_dims"))
    rc = list(attr_ints(attrs, "rhs_contracting_dims"))
    lfree = [d for d in range(lhs_rank) if d not in lb and d not in lc]
    rfree = [d for d in range(rhs_rank) if d not in rb and d not in rc]
    return lb, rb, lc, rc, lfree, rfree


def matmul_operands(lhs: np.ndarray, rhs: np.ndarray, out_dtype: np.dtype,
                    attrs: Mapping[str, AttrValue]) -> tuple[np.ndarray, np.ndarray, np.dtype]:
    """(a, b, acc): the operands of dot_general as stacks (..., m, k) and (..., k, n) of
    the accumulation dtype `acc`, with the same leading (batch) dims: one when both merge
    their batch dims in place, else the batch dims as they are (views of lhs and rhs when
    no copy is needed, see the module docstring)."""
    lb, rb, lc, rc, lfree, rfree = product_dims(attrs, lhs.ndim, rhs.ndim)
    acc = accumulate_dtype(lhs.dtype, out_dtype)
    if lhs.dtype == np.bool_:
        acc = np.dtype(np.int64)
    ta = lhs.transpose([*lb, *lfree, *lc])
    tb = rhs.transpose([*rb, *rc, *rfree])
    nb = len(lb)
    ga, gb = (len(lfree), len(lc)), (len(rc), len(rfree))
    merge = _merges(ta, (nb, *ga)) and _merges(tb, (nb, *gb))
    return _stacked(ta, nb, ga, acc, merge), _stacked(tb, nb, gb, acc, merge), acc


@kernel(ops.dot_general)
def dot_general(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
                attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """out[b, m, n] = sum_k lhs[b, m, k] * rhs[b, k, n] (dims per the attributes)."""
    out = outs[0]
    a, b, acc = matmul_operands(args[0], args[1], out.dtype, attrs)
    with np.errstate(all="ignore"):
        if out.dtype == acc and out.flags.c_contiguous:
            np.matmul(a, b, out=out.reshape(_product_shape(a, b)))
        else:
            r = np.matmul(a, b).reshape(out.shape)
            store(out, r != 0 if out.dtype == np.bool_ else r)


@plan(ops.dot_general, dense_constants=True)
def dot_general_plan(args: Sequence[np.ndarray], out: np.ndarray,
                     attrs: Mapping[str, AttrValue], ctx: KernelContext,
                     constant: Sequence[bool], pool: ScratchPool) -> Step | None:
    """Into an out of the accumulation dtype whose matrices BLAS writes in place (C-
    contiguous, or a slab of columns of such an array, `parallel_steps`):
    ``np.matmul(a, b, out=out3)`` with its stacked operands made once when they are views
    of their slot or constants (a transposed weight is packed once, at load)."""
    lhs, rhs = args
    a, b, acc = matmul_operands(lhs, rhs, out.dtype, attrs)
    if out.dtype != acc:
        return None
    for derived, source, fixed in ((a, lhs, constant[0]), (b, rhs, constant[1])):
        if not fixed and not (derived.size == 0 or np.may_share_memory(derived, source)):
            return None  # a copy made now would not follow later values of the slot
    out3 = out.reshape(_product_shape(a, b))
    if out3.size and not (np.may_share_memory(out3, out) and _blas_matrices(out3)):
        return None  # numpy would compute into a copy, or by its own loop
    if a.ndim == 3 and a.shape[0] == 1 and acc in NATIVE_FLOATS and _blas_layout(a[0]) \
            and _blas_layout(b[0]) and out3.flags.c_contiguous:
        # one matrix product: np.dot calls the same BLAS gemm as np.matmul (the same bits
        # on 3,024 shapes and layouts, both OpenBLAS kernels) with less of numpy's
        # dispatch: 0.50 against 0.81 us for examples/mlp.onnx's f32[4,16] x f32[16,32]
        return bound_call(np.dot, a[0], b[0], out3[0])
    return bound_call(np.matmul, a, b, out3)


def _product_shape(a: np.ndarray, b: np.ndarray) -> tuple[int, ...]:
    """The shape of np.matmul(a, b) for stacks with the same leading dims."""
    return (*a.shape[:-1], b.shape[-1])


def _blas_layout(m: np.ndarray) -> bool:
    """A matrix BLAS reads in place (C- or Fortran-contiguous): np.dot gives it to gemm
    as it is; another layout would take numpy's own loop."""
    return m.flags.c_contiguous or m.flags.f_contiguous
