"""Compile-time evaluation of nodes whose inputs are all constants.

Shape computations (``Shape -> Gather -> Concat -> Reshape`` chains, as exporters produce)
must be known at compile time; this module evaluates such a node with the ONNX reference
implementation (numpy) so its outputs become ``constant`` ops that later converters can read.
Folding is an optimisation for every other node: when it is not possible (an input is not a
constant, the inputs are too large, the reference evaluator fails), the node is lowered to
core ops as usual.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import onnx

from ir.dtypes import DType

# Above this many input elements a node is lowered rather than evaluated at compile time
# (the reference implementation of e.g. Conv is slow, and big results bloat the module).
FOLD_LIMIT = 1 << 20

# Ops never folded: their converters handle constants themselves or folding buys nothing.
# ConstantOfShape, Expand and Tile turn a few input elements into a big result: their
# converters keep one repeated value a splat (a folded ConstantOfShape of a VGG-19 weight
# would otherwise materialise 400 MB before it is found to be one value).
NO_FOLD = frozenset({"Constant", "Identity", "Dropout", "ConstantOfShape", "Expand", "Tile"})


def fold_node(node: onnx.NodeProto, opset: int, arrays: Sequence[np.ndarray | None],
              out_dtypes: Sequence[DType | None]) -> list[np.ndarray] | None:
    """The node's outputs computed with numpy, cast to `out_dtypes` (the ONNX-inferred type
    of each output, None when unknown), or None when the node cannot be folded.

    `arrays[i]` is the constant value of input `i` (None for an omitted optional input or a
    non-constant one; an input named but not constant prevents folding).
    """
    if node.op_type in NO_FOLD or not node.input or node.domain not in ("", "ai.onnx"):
        return None
    feeds: dict[str, np.ndarray] = {}
    total = 0
    for name, arr in zip(node.input, arrays, strict=True):
        if not name:
            continue
        if arr is None:
            return None
        feeds[name] = np.asarray(arr)
        total += feeds[name].size
    if total > FOLD_LIMIT:
        return None
    try:
        from onnx.reference import ReferenceEvaluator

        # a one-node model, so that the evaluator picks the operator version of `opset`
        # (given a bare node it runs the latest version)
        graph = onnx.helper.make_graph(
            [node], "fold", [onnx.helper.make_value_info(n, onnx.TypeProto()) for n in feeds],
            [onnx.helper.make_value_info(o, onnx.TypeProto()) for o in node.output if o])
        model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = ReferenceEvaluator(model).run(None, feeds)
    except Exception:  # noqa: BLE001 - any failure just means "lower it instead"
        return None
    out: list[np.ndarray] = []
    named = iter(results)
    for i, name in enumerate(node.output):
        if not name:
            out.append(np.zeros(0))  # unused output, never read
            continue
        arr = np.asarray(next(named))
        dtype = out_dtypes[i] if i < len(out_dtypes) else None
        try:
            if dtype is None:
                dtype = DType.from_numpy(arr.dtype)
            out.append(arr.astype(dtype.numpy))
        except (ValueError, TypeError):
            return None
    return out
