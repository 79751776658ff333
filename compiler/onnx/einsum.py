"""Einsum as reductions, dot_general (one per operand pair, left to right) and a transpose.

Labels are letters; '...' stands for the leading broadcast dims (aligned right across
operands); without '->' the output is the ellipsis dims then the labels used once, sorted.
A label repeated within one operand takes that operand's diagonal first (the dims masked
by an iota equality and summed).
"""

from __future__ import annotations

from nxcc.compiler.onnx.context import NodeContext, reduce, splat_like
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType

ELLIPSIS_BASE = 0x100  # labels for '...' dims: characters no equation uses


def parse(ctx: NodeContext, equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """Each operand's labels (ellipsis expanded) and the output's."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ctx.fail(f"equation '{equation}' has {len(terms)} operands, got {len(ranks)}")
    ell_rank = 0
    for t, r in zip(terms, ranks, strict=True):
        if "..." in t:
            ell_rank = max(ell_rank, r - len(t.replace("...", "")))
    ell = "".join(chr(ELLIPSIS_BASE + i) for i in range(ell_rank))
    labels = []
    for t, r in zip(terms, ranks, strict=True):
        n = r - len(t.replace("...", ""))
        full = t.replace("...", ell[ell_rank - n:] if n else "")
        if len(full) != r or not all(c.isalpha() for c in t.replace("...", "")):
            raise ctx.fail(f"term '{t}' of '{equation}' does not fit an operand of rank {r}")
        labels.append(full)
    if arrow:
        output = out.replace("...", ell)
    else:
        counts: dict[str, int] = {}
        for full in labels:
            for c in full:
                counts[c] = counts.get(c, 0) + 1
        output = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    for c in output:
        if not any(c in full for full in labels):
            raise ctx.fail(f"output label '{c}' of '{equation}' is in no operand")
    return labels, output


def _sum_out(ctx: NodeContext, v: Value, labels: str, keep: str) -> tuple[Value, str]:
    dims = [i for i, c in enumerate(labels) if c not in keep]
    if not dims:
        return v, labels
    return reduce(ctx.b, v, dims, ops.add), "".join(c for c in labels if c in keep)


def _diagonal(ctx: NodeContext, v: Value, labels: str) -> tuple[Value, str]:
    """`v` with every label that repeats reduced to its diagonal (first position kept)."""
    b = ctx.b
    for i, c in enumerate(labels):
        j = labels.find(c, i + 1)
        while j != -1:
            shape = v.type.shape
            if shape[i] != shape[j]:
                raise ctx.fail(f"label '{c}' has sizes {shape[i]} and {shape[j]}")
            eye = b.compare(b.iota(dtype=DType.S64, shape=shape, dimension=i),
                            b.iota(dtype=DType.S64, shape=shape, dimension=j), direction="EQ")
            v = reduce(b, b.select(eye, v, splat_like(b, 0, v)), [j], ops.add)
            labels = labels[:j] + labels[j + 1:]
            j = labels.find(c, i + 1)
    return v, labels


@converts("Einsum")
def convert_einsum(ctx: NodeContext) -> list[Value]:
    b = ctx.b
    values = [ctx.input(i) for i in range(len(ctx.inputs))]
    labels, output = parse(ctx, str(ctx.attr("equation", "")), [v.type.rank for v in values])
    for k, (v, full) in enumerate(zip(values, labels, strict=True)):
        values[k], labels[k] = _diagonal(ctx, v, full)
    sizes: dict[str, int] = {}
    for v, full in zip(values, labels, strict=True):
        for c, n in zip(full, v.type.shape, strict=True):
            if sizes.get(c, 1) not in (1, n) and n != 1:
                raise ctx.fail(f"label '{c}' has sizes {sizes[c]} and {n}")
            sizes[c] = max(sizes.get(c, 1), n)
    operands: list[tuple[Value, str]] = []
    for v, full in zip(values, labels, strict=True):  # broadcast size-1 dims
        want = tuple(sizes[c] for c in full)
        operands.append((b.broadcast_to(v, want), full))
    while len(operands) > 1:
        (a, la), (rhs, lc) = operands[0], operands[1]
        later = output + "".join(full for _, full in operands[2:])
        a, la = _sum_out(ctx, a, la, lc + later)
        rhs, lc = _sum_out(ctx, rhs, lc, la + later)
        batch = [x for x in la if x in lc and x in later]
        contract = [x for x in la if x in lc and x not in later]
        res = b.dot_general(a, rhs, lhs_batch_dims=tuple(la.index(x) for x in batch),
                            rhs_batch_dims=tuple(lc.index(x) for x in batch),
                            lhs_contracting_dims=tuple(la.index(x) for x in contract),
                            rhs_contracting_dims=tuple(lc.index(x) for x in contract))
        names = "".join(batch) + "".join(x for x in la if x not in lc) + "".join(
            x for x in lc if x not in la)
        operands = [(res, names), *operands[2:]]
    v, full = _sum_out(ctx, *operands[0], output)
    perm = tuple(full.index(c) for c in output)
    if perm != tuple(range(len(perm))):
        v = b.transpose(v, permutation=perm)
    return [v]
