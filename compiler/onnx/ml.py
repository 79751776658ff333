"""Operators of the ai.onnx.ml domain that work on tensors: Binarizer,
ArrayFeatureExtractor and TreeEnsemble."""

from __future__ import annotations

import numpy as np

from nxcc.compiler.onnx.context import NodeContext, splat_like
from nxcc.compiler.onnx.indexing import take
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType


@converts("ai.onnx.ml.Binarizer")
def convert_binarizer(ctx: NodeContext) -> list[Value]:
    """1 where x > threshold, else 0, in x's type."""
    b, x = ctx.b, ctx.input(0)
    above = b.compare(x, splat_like(b, float(ctx.attr("threshold", 0.0)), x), direction="GT")
    return [b.convert(above, x.type.dtype)]


@converts("ai.onnx.ml.ArrayFeatureExtractor")
def convert_array_feature_extractor(ctx: NodeContext) -> list[Value]:
    """X[..., indices] (indices flattened); a 1-D X gives a [1, k] result, as onnxruntime."""
    b, x, idx = ctx.b, ctx.input(0, "X"), ctx.input(1, "Y")
    if not idx.type.dtype.is_integer or x.type.rank < 1:
        raise ctx.fail(f"expects a tensor and integer indices, got {x.type} and {idx.type}")
    flat = b.convert(b.reshape(idx, (idx.type.size,)), DType.S64)
    out = take(b, x, flat, x.type.rank - 1)
    return [b.reshape(out, (1, idx.type.size)) if x.type.rank == 1 else out]


TREE_MODES = ("LE", "LT", "GE", "GT", "EQ", "NE", "MEMBER")


@converts("ai.onnx.ml.TreeEnsemble")
def convert_tree_ensemble(ctx: NodeContext) -> list[Value]:
    """TreeEnsemble (ai.onnx.ml 5) unrolled at compile time: every leaf becomes the mask
    of samples whose path reaches it (the AND of its ancestors' decisions, each a compare
    of one feature column); leaves add (SUM, AVERAGE) or min/max (MIN, MAX) their weight
    into their target's column. post_transform is ignored, as the ONNX reference does."""
    b, x = ctx.b, ctx.input(0)
    if x.type.rank != 2 or not x.type.dtype.is_float:
        raise ctx.fail(f"expects a float matrix [N, F], got {x.type}")
    a = ctx.attrs
    splits = np.asarray(a["nodes_splits"]).reshape(-1)
    feats = [int(v) for v in a["nodes_featureids"]]
    modes = [int(v) for v in np.asarray(a["nodes_modes"]).reshape(-1)]
    true_ids, false_ids = list(a["nodes_truenodeids"]), list(a["nodes_falsenodeids"])
    true_leaf, false_leaf = list(a["nodes_trueleafs"]), list(a["nodes_falseleafs"])
    missing = list(a.get("nodes_missing_value_tracks_true") or [0] * len(feats))
    targets = [int(v) for v in a["leaf_targetids"]]
    weights = np.asarray(a["leaf_weights"]).reshape(-1)
    members = iter(np.asarray(a.get("membership_values", np.zeros(0))).reshape(-1).tolist())
    n_targets = int(a.get("n_targets", max(targets) + 1))
    agg = int(a.get("aggregate_function", 1))
    n = x.type.shape[0]
    cols = [b.reshape(b.slice(x, start_indices=(0, f), limit_indices=(n, f + 1),
                              strides=(1, 1)), (n,)) for f in range(x.type.shape[1])]
    leaves: list[tuple[int, Value | None]] = []  # (leaf index, reaching mask)

    def decide(i: int) -> Value:
        col, mode = cols[feats[i]], modes[i]
        if mode == 6:
            values = []
            while (v := next(members, None)) is not None and v and not np.isnan(v):
                values.append(v)
            hit = b.splat(False, col.type.with_dtype(DType.PRED))
            for v in values:
                hit = b.op(ops.or_, [hit, b.compare(col, splat_like(b, v, col), direction="EQ")])
        elif 0 <= mode < 6:
            hit = b.compare(col, splat_like(b, float(splits[i]), col),
                            direction=TREE_MODES[mode])
        else:
            raise ctx.fail(f"node {i} has unknown mode {mode}")
        if missing[i]:
            hit = b.op(ops.or_, [hit, b.compare(col, col, direction="NE")])
        return hit

    def walk(i: int, is_leaf: bool, mask: Value | None) -> None:
        if is_leaf:
            leaves.append((i, mask))
            return
        hit = decide(i)
        miss = b.op(ops.not_, [hit])
        walk(true_ids[i], bool(true_leaf[i]), hit if mask is None else b.op(ops.and_, [mask, hit]))
        walk(false_ids[i], bool(false_leaf[i]),
             miss if mask is None else b.op(ops.and_, [mask, miss]))

    roots = [int(r) for r in a["tree_roots"]]
    for r in roots:
        degenerate = true_leaf[r] and false_leaf[r] and true_ids[r] == false_ids[r]
        walk(true_ids[r] if degenerate else r, bool(degenerate), None)
    vec = x.type.with_shape((n,))
    if agg in (0, 1):
        init = 0.0
    elif agg in (2, 3):
        info = np.finfo(x.type.dtype.numpy)
        init = float(info.max if agg == 2 else info.min)
    else:
        raise ctx.fail(f"aggregate_function {agg} is not one of 0-3")
    out = [b.splat(init, vec) for _ in range(n_targets)]
    for leaf, mask in leaves:
        t, w = targets[leaf], float(weights[leaf])
        if agg in (0, 1):
            w = w / len(roots) if agg == 0 else w
            val = b.splat(w, vec) if mask is None else b.select(mask, b.splat(w, vec),
                                                               b.splat(0.0, vec))
            out[t] = b.add(out[t], val)
        else:
            val = b.splat(w, vec) if mask is None else b.select(mask, b.splat(w, vec),
                                                               b.splat(init, vec))
            out[t] = b.minimum(out[t], val) if agg == 2 else b.maximum(out[t], val)
    return [b.concatenate(*[b.reshape(o, (n, 1)) for o in out], dimension=1)]
