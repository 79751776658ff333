"""TfIdfVectorizer on integer inputs, as comparisons against the constant n-gram pool.

For each skip distance d in 1..max_skip_count + 1 and each n-gram size n in
[min_gram_length, max_gram_length], the n-grams x[i], x[i + d], ..., x[i + (n - 1) d] of
every start i are compared with the pool's n-grams of size n (a constant); the matches,
summed over i, are added to the output positions ``ngram_indexes`` gives (a constant
one-hot matrix). A unigram counts once (skips do not apply to it). TF outputs the counts,
IDF the weight (or 1) where a count is non-zero, TFIDF weight x count. String pools are
not supported (no string tensors).
"""

from __future__ import annotations

import numpy as np

from nxcc.compiler.onnx.context import NodeContext, reduce
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType


def pool_grams(ctx: NodeContext) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(size n, [M, n] grams, [M] global gram numbers) for each n in the node's range."""
    pool = np.asarray(ctx.attr("pool_int64s", []), np.int64)
    if ctx.attr("pool_strings") is not None:
        raise ctx.unsupported("a string pool (pool_strings)")
    counts = [int(c) for c in ctx.attr("ngram_counts", [])]
    lo, hi = int(ctx.attr("min_gram_length")), int(ctx.attr("max_gram_length"))
    out = []
    number = 0
    for i, start in enumerate(counts):
        end = counts[i + 1] if i + 1 < len(counts) else len(pool)
        n = i + 1
        grams = pool[start:end].reshape(-1, n) if end > start else np.zeros((0, n), np.int64)
        if lo <= n <= hi and len(grams):
            out.append((n, grams, np.arange(number, number + len(grams))))
        number += len(grams)
    return out


def _windows(b: Builder, x: Value, n: int, d: int) -> Value | None:
    """[..., P, n]: x[..., i + k d] for k < n at every start i that fits (None if none)."""
    length = x.type.shape[-1]
    starts = length - (n - 1) * d
    if starts <= 0:
        return None
    rank = x.type.rank
    parts = []
    for k in range(n):
        lo = [0] * rank
        hi = list(x.type.shape)
        lo[-1], hi[-1] = k * d, k * d + starts
        piece = b.slice(x, start_indices=tuple(lo), limit_indices=tuple(hi), strides=(1,) * rank)
        parts.append(b.reshape(piece, (*piece.type.shape, 1)))
    return parts[0] if n == 1 else b.concatenate(*parts, dimension=rank)


@converts("TfIdfVectorizer")
def convert_tfidf(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    if not x.type.dtype.is_integer or x.type.rank not in (1, 2):
        raise ctx.fail(f"expects a 1-D or 2-D integer input, got {x.type}")
    indexes = [int(i) for i in ctx.attr("ngram_indexes", [])]
    size = max(indexes) + 1 if indexes else 0
    x64 = b.convert(x, DType.S64)
    batch = x.type.shape[:-1]
    acc = b.splat(0.0, x64.type.with_dtype(DType.F32).with_shape((*batch, size)))
    for n, grams, numbers in pool_grams(ctx):
        onehot = np.zeros((len(grams), size), np.float32)
        onehot[np.arange(len(grams)), np.asarray(indexes)[numbers]] = 1.0
        skips = 1 if n == 1 else int(ctx.attr("max_skip_count", 0)) + 1
        for d in range(1, skips + 1):
            win = _windows(b, x64, n, d)
            if win is None:
                continue
            shape = (*win.type.shape[:-1], len(grams), n)
            w = b.op(ops.broadcast_in_dim, [win], {"shape": shape, "broadcast_dimensions": (
                *range(len(shape) - 2), len(shape) - 1)})
            g = b.op(ops.broadcast_in_dim, [b.constant(grams)], {
                "shape": shape, "broadcast_dimensions": (len(shape) - 2, len(shape) - 1)})
            eq = b.convert(b.compare(w, g, direction="EQ"), DType.F32)
            hit = reduce(b, eq, [len(shape) - 1], ops.multiply)          # [..., P, M]
            found = reduce(b, hit, [len(shape) - 3], ops.add)            # [..., M]
            acc = b.add(acc, b.dot_general(found, b.constant(onehot),
                                           lhs_contracting_dims=(found.type.rank - 1,),
                                           rhs_contracting_dims=(0,)))
    mode = ctx.attr("mode", "TF")
    weights = ctx.attr("weights")
    if mode == "TF":
        return [acc]
    idf = None if weights is None or not len(weights) else b.broadcast_to(
        b.constant(np.asarray(weights, np.float32)), acc.type.shape)
    if mode == "IDF":
        present = b.compare(acc, b.splat(0.0, acc.type), direction="GT")
        return [b.select(present, idf if idf is not None else b.splat(1.0, acc.type),
                         b.splat(0.0, acc.type))]
    if mode == "TFIDF":
        return [acc if idf is None else b.multiply(acc, idf)]
    raise ctx.fail(f"mode must be TF, IDF or TFIDF, got {mode!r}")
