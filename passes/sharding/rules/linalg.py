"""Sharding rules of dot_general and convolution: the candidates the cost model chooses among.

dot_general (result dims: batch, lhs free, rhs free):
- "batch": split a batch dimension of both operands, or a free dimension of lhs (the rows
  of the activations: data parallel); rhs stays whole in the latter;
- "column": split a free dimension of rhs (output features), lhs whole;
- "row": split a contracting dimension of both operands; each device holds a partial sum;
- "partial": a partial-sum operand times a replicated one stays a partial sum.

convolution:
- "batch": split the input batch (the kernel stays whole);
- "column": split the kernel's output features (the input stays whole); a grouped
  convolution whose group count divides by n splits whole groups instead;
- "row": split the input features of input and kernel; the result is a partial sum;
- "partial": the input a partial sum, the kernel replicated.
"""

from __future__ import annotations

from nxcc.ir import ops
from nxcc.ir.attributes import attr_ints, attr_of
from nxcc.ir.core import Module, Op
from nxcc.passes.sharding.rules.strategy import (
    R,
    Strategy,
    partial,
    replicate,
    rule,
    split,
    splittable,
)


@rule(ops.dot_general)
def dot_general(op: Op, n: int, module: Module | None) -> list[Strategy]:
    lhs, rhs = (v.type for v in op.operands)
    res = op.results[0].type
    lb, rb = attr_ints(op.attrs, "lhs_batch_dims"), attr_ints(op.attrs, "rhs_batch_dims")
    lc = attr_ints(op.attrs, "lhs_contracting_dims")
    rc = attr_ints(op.attrs, "rhs_contracting_dims")
    lfree = [d for d in range(lhs.rank) if d not in lb and d not in lc]
    rfree = [d for d in range(rhs.rank) if d not in rb and d not in rc]
    out = [replicate(op)]
    for i, (a, b) in enumerate(zip(lb, rb, strict=True)):
        if splittable(lhs.shape[a], n):
            out.append(Strategy(f"batch(dim {i})", "batch", (split(lhs.rank, a, n),
                                split(rhs.rank, b, n)), (split(res.rank, i, n),)))
    base = len(lb)
    for j, a in enumerate(lfree):
        if splittable(lhs.shape[a], n):
            out.append(Strategy(f"batch(lhs dim {a})", "batch", (split(lhs.rank, a, n), R),
                                (split(res.rank, base + j, n),)))
    base += len(lfree)
    for j, b in enumerate(rfree):
        if splittable(rhs.shape[b], n):
            out.append(Strategy(f"column(rhs dim {b})", "column", (R, split(rhs.rank, b, n)),
                                (split(res.rank, base + j, n),)))
    if not res.dtype.is_pred:
        p = partial(res.rank, n)
        for a, b in zip(lc, rc, strict=True):
            if splittable(lhs.shape[a], n):
                out.append(Strategy(f"row(lhs dim {a})", "row", (split(lhs.rank, a, n),
                                    split(rhs.rank, b, n)), (p,)))
        if res.dtype.is_float:
            out.append(Strategy("partial lhs", "partial", (partial(lhs.rank, n), R), (p,)))
            out.append(Strategy("partial rhs", "partial", (R, partial(rhs.rank, n)), (p,)))
    return out


@rule(ops.convolution)
def convolution(op: Op, n: int, module: Module | None) -> list[Strategy]:
    lhs, rhs = (v.type for v in op.operands)
    res = op.results[0].type
    a = op.attrs

    def dim(key: str) -> int:
        return attr_of(a, key, int)

    groups, batch_groups = dim("feature_group_count"), dim("batch_group_count")
    out = [replicate(op)]
    if batch_groups == 1 and splittable(lhs.shape[dim("input_batch_dim")], n):
        out.append(Strategy("batch", "batch", (split(lhs.rank, dim("input_batch_dim"), n), R),
                            (split(res.rank, dim("output_batch_dim"), n),)))
    kout = rhs.shape[dim("kernel_output_feature_dim")]
    res_split = split(res.rank, dim("output_feature_dim"), n)
    rhs_split = split(rhs.rank, dim("kernel_output_feature_dim"), n)
    if batch_groups == 1 and groups == 1 and splittable(kout, n):
        out.append(Strategy("column", "column", (R, rhs_split), (res_split,)))
    elif batch_groups == 1 and groups > 1 and groups % n == 0:
        out.append(Strategy("column(groups)", "column",
                            (split(lhs.rank, dim("input_feature_dim"), n), rhs_split),
                            (res_split,), {**a, "feature_group_count": groups // n}))
    cin = lhs.shape[dim("input_feature_dim")]
    if batch_groups == 1 and groups == 1 and splittable(cin, n) and not res.dtype.is_pred:
        out.append(Strategy("row", "row", (split(lhs.rank, dim("input_feature_dim"), n),
                                           split(rhs.rank, dim("kernel_input_feature_dim"), n)),
                            (partial(res.rank, n),)))
    if res.dtype.is_float:
        out.append(Strategy("partial", "partial", (partial(lhs.rank, n), R),
                            (partial(res.rank, n),)))
    return out
