"""A sum of zero-padded pieces that tile one dimension becomes their concatenation.

The gradient of slicing a value into pieces along one dimension (attention's fused QKV
projection split into q, k and v) is each piece's gradient padded with zeros back to the
whole, and the pads added: every pad writes the whole array, mostly zeros, and the adds read
them all again. `add(pad(a, 0), pad(b, 0))`, where the two pads pad the same one dimension
and a's part ends where b's begins (or the other way), is `pad(concatenate(a, b), 0)` with
a's low and b's high padding (no pad at all when both are zero); a concatenate of a
concatenate along the same dimension, used once, takes its pieces, so three pieces make one
concatenate. The values are the same but for the sign of a zero (-0 + 0 is +0).
"""

from __future__ import annotations

from collections.abc import Sequence

from nxcc.ir import ops
from nxcc.ir.attributes import attr_ints, attr_of
from nxcc.ir.core import Op, Value
from nxcc.ir.patterns import RewritePattern, Rewriter
from nxcc.ir.rewrite import LiveUseCounts, constant_value


class SumOfPads(RewritePattern):
    """add(pad(a, 0), pad(b, 0)) -> [pad(]concatenate(a, b)[, 0)] (see the module doc)."""

    ops = (ops.add,)

    def __init__(self) -> None:
        self.counts: dict[int, LiveUseCounts] = {}  # per function, by id

    def rewrite(self, op: Op, rewriter: Rewriter) -> Sequence[Value] | None:
        fn = rewriter.function
        counts = self.counts.get(id(fn))
        if counts is None:
            counts = self.counts[id(fn)] = LiveUseCounts(fn)
        first, second = (_piece(v, counts) for v in op.operands)
        if first is None or second is None:
            return None
        a, dim_a, low_a, high_a, pad_a = first
        b, dim_b, low_b, high_b, _ = second
        n = op.result.type.shape[dim_a]
        if dim_a != dim_b:
            return None
        if n - high_a != low_b:  # a's part is not just before b's: the other order?
            if n - high_b != low_a:
                return None
            (a, low_a), (b, high_b) = (b, low_b), (a, high_a)
        parts = [*_parts(a, dim_a, counts), *_parts(b, dim_a, counts)]
        whole = rewriter.b.concatenate(*parts, dimension=dim_a)
        if low_a or high_b:
            counts.counts[id(whole)] = 1  # read by the pad only
            rank = op.result.type.rank
            low, high = [0] * rank, [0] * rank
            low[dim_a], high[dim_a] = low_a, high_b
            whole = rewriter.b.pad(whole, pad_a.operands[1], low=low, high=high,
                                   interior=[0] * rank)
        counts.replaced(op.result, whole)
        whole.name, whole.sharding = op.result.name, op.result.sharding
        return [whole]


def _piece(v: Value, counts: LiveUseCounts) -> tuple[Value, int, int, int, Op] | None:
    """(a, dim, low, high, the pad) when `v` = pad(a, 0), used once, padding dimension dim
    only (by low and high >= 0, no interior padding)."""
    pad = v.owner
    if pad is None or pad.opdef is not ops.pad or counts.of(v) != 1:
        return None
    zero = constant_value(pad.operands[1])
    if zero is None or not zero.is_splat or float(zero.splat_value) != 0.0:
        return None
    low, high, interior = (attr_ints(pad.attrs, k) for k in ("low", "high", "interior"))
    if any(interior) or min(*low, *high) < 0:
        return None
    dims = [d for d in range(len(low)) if low[d] or high[d]]
    if len(dims) != 1:
        return None
    d = dims[0]
    return pad.operands[0], d, low[d], high[d], pad


def _parts(v: Value, dim: int, counts: LiveUseCounts) -> list[Value]:
    """The pieces of `v` to concatenate: those of a concatenate along `dim` used once."""
    cat = v.owner
    if (cat is not None and cat.opdef is ops.concatenate and counts.of(v) == 1
            and attr_of(cat.attrs, "dimension", int) == dim):
        return list(cat.operands)
    return [v]
